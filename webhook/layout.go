package webhook

import (
	"strings"

	"github.com/retentionguard/retention-guard/internal/proof"
)

// denial is the denial message in parts, laid out by layout.
type denial struct {
	header   string
	policies []policyParts // the refusing policies, in order
	moreLine func(n int) string
	override []line
}

// lineKind says how the layout shows a line of a way out or of the
// override.
type lineKind int

const (
	// prose is wrapped at words to maxLine when the message is rendered,
	// never cut.
	prose lineKind = iota
	// command is shown whole, indented by two spaces, never wrapped or
	// cut: people copy it.
	command
)

// line is one line of a way out or of the override, carried with its kind
// until the message is rendered (denial.lines), which decides by the kind.
type line struct {
	text string // a command's is indented already
	kind lineKind
}

func proseLine(s string) line { return line{text: s, kind: prose} }

// proseLines is a text of one prose line.
func proseLines(s string) []line { return []line{proseLine(s)} }

func commandLine(s string) line { return line{text: "  " + s, kind: command} }

// emitLines calls emit with each line of ls as the message shows it: a
// command as is, prose wrapped at words.
func emitLines(ls []line, emit func(string)) {
	for _, l := range ls {
		if l.kind == command {
			emit(l.text)
			continue
		}
		for _, wl := range wrapFinding(l.text, maxLine) {
			emit(wl)
		}
	}
}

// wayChoice is how a listed policy says its way out.
type wayChoice int

const (
	wayInWords   wayChoice = iota // one sentence, no commands
	wayFull                       // each way out, with its commands
	wayWithCheck                  // and the `retention-guard check` hint
)

// listedPolicy is how much of one refusing policy the message shows.
type listedPolicy struct {
	parts *policyParts
	// depth[i] is how many wrapped lines the i-th listed finding shows
	// (its last marked "(…)" when it has more); 0: all. len(depth) is how
	// many findings are listed; the rest are counted.
	depth []int
	way   wayChoice
}

// layout lays the message out in one pass, in order of importance, each
// part taking what it needs of what the parts before it left (limit
// bytes in all); a part that does not fit is left out, and what is left
// out is counted ("- and N more", "And N more refusing policies"):
//
//  1. the header, the override and the first refusing policy: its line,
//     its numbers, the first line of one finding of each kind of problem
//     (findingRank, at most maxFindingsShown), and its way out in words;
//  2. its way out in full, with the commands;
//  3. the first lines of its other findings (up to maxFindingsShown);
//  4. each listed finding in full, in order, else its first two lines;
//  5. the other refusing policies, each with its first finding's first
//     line and its way out (in full when that fits, else in words);
//  6. the `retention-guard check` hint of the first policy.
//
// Findings and prose are wrapped at words, never cut; commands are never
// cut. When even part 1 does not fit (very long names or findings), the
// first lines that fit are shown with where to read the rest.
func (m *denial) layout(limit int) string {
	first := listedPolicy{parts: &m.policies[0]}
	for range min(max(first.parts.distinct, 1), len(first.parts.findings)) {
		first.depth = append(first.depth, 1)
	}
	ls := []listedPolicy{first}
	fits := func() bool { return m.size(ls) <= limit }
	for !fits() && len(ls[0].depth) > 1 {
		ls[0].depth = ls[0].depth[:len(ls[0].depth)-1]
	}
	if !fits() {
		return m.renderFirst(limit)
	}
	// try keeps a change that fits, and undoes one that does not.
	try := func(change, undo func()) bool {
		change()
		if fits() {
			return true
		}
		undo()
		return false
	}
	p := &ls[0]
	try(func() { p.way = wayFull }, func() { p.way = wayInWords })
	for len(p.depth) < len(p.parts.findings) {
		if !try(func() { p.depth = append(p.depth, 1) }, func() { p.depth = p.depth[:len(p.depth)-1] }) {
			break
		}
	}
	for i := range p.depth {
		_ = try(func() { p.depth[i] = 0 }, func() { p.depth[i] = 1 }) || try(func() { p.depth[i] = 2 }, func() { p.depth[i] = 1 })
	}
	for i := 1; i < len(m.policies); i++ {
		next := briefly(&m.policies[i])
		next.way = wayFull
		if !try(func() { ls = append(ls, next) }, func() { ls = ls[:len(ls)-1] }) {
			next.way = wayInWords
			if !try(func() { ls = append(ls, next) }, func() { ls = ls[:len(ls)-1] }) {
				break
			}
		}
	}
	p = &ls[0] // appending may have moved ls
	if p.way == wayFull {
		try(func() { p.way = wayWithCheck }, func() { p.way = wayFull })
	}
	return m.render(ls)
}

// briefly lists a policy with the first line of its first finding and
// its way out in words.
func briefly(pp *policyParts) listedPolicy {
	lp := listedPolicy{parts: pp}
	if len(pp.findings) > 0 {
		lp.depth = []int{1}
	}
	return lp
}

// lines calls emit with each line of the message that lists ls.
func (m *denial) lines(ls []listedPolicy, emit func(string)) {
	emit(m.header)
	for _, lp := range ls {
		pp := lp.parts
		for _, l := range pp.head {
			emit(l)
		}
		for i, depth := range lp.depth {
			f := pp.findings[i]
			if depth > 0 && len(f) > depth {
				for _, l := range f[:depth-1] {
					emit(l)
				}
				emit(f[depth-1] + " (…)")
				continue
			}
			for _, l := range f {
				emit(l)
			}
		}
		if more := pp.total - len(lp.depth); more > 0 {
			emit(pp.moreLine(more))
		}
		way := pp.wayCompact
		switch lp.way {
		case wayFull:
			way = pp.wayNoCheck
		case wayWithCheck:
			way = pp.way
		}
		emitLines(way, emit)
		for _, l := range pp.refused {
			emit(l)
		}
	}
	if more := len(m.policies) - len(ls); more > 0 {
		emit(m.moreLine(more))
	}
	emitLines(m.override, emit)
}

func (m *denial) size(ls []listedPolicy) int {
	n := -1 // no newline after the last line
	m.lines(ls, func(l string) { n += len(l) + 1 })
	return n
}

func (m *denial) render(ls []listedPolicy) string {
	var b strings.Builder
	b.Grow(m.size(ls))
	m.lines(ls, func(l string) {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
	})
	return b.String()
}

// wrapFinding wraps a finding at word boundaries into lines of at most n
// bytes, continuation lines indented by four spaces. A word longer than a
// line (a long topic name) gets a line of its own, whole.
func wrapFinding(l string, n int) []string {
	if len(l) <= n {
		return []string{l}
	}
	var out []string
	line := ""
	for _, w := range strings.Fields(l) {
		switch {
		case line == "":
			line = w
		case len(line)+1+len(w) <= n:
			line += " " + w
		default:
			out = append(out, line)
			line = "    " + w
		}
	}
	return append(out, line)
}

// renderFirst renders the compact message's lines in order while they fit
// in limit bytes with a last line saying how many were left out and where
// to read them; a line is never cut, except the header of a workload whose
// name alone exceeds the limit.
func (m *denial) renderFirst(limit int) string {
	var all []string
	m.lines([]listedPolicy{briefly(&m.policies[0])}, func(l string) { all = append(all, l) })
	p := m.policies[0]
	rest := func(n int) string {
		return "(" + proof.Plural(int64(n), "more line") + ": kubectl describe crp " + p.name + " -n " + p.namespace + ")"
	}
	var b strings.Builder
	for i, l := range all {
		tail := ""
		if left := len(all) - i - 1; left > 0 {
			tail = "\n" + rest(left)
		}
		sep := 0
		if b.Len() > 0 {
			sep = 1
		}
		if b.Len()+sep+len(l)+len(tail) > limit {
			if b.Len() == 0 {
				return proof.Truncate(l, limit)
			}
			b.WriteString("\n" + rest(len(all)-i))
			return b.String()
		}
		if sep == 1 {
			b.WriteByte('\n')
		}
		b.WriteString(l)
	}
	return b.String()
}
