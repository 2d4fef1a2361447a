package webhook

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	kjson "sigs.k8s.io/json"
)

// jsonScanner reads a JSON document in one pass, validating it as it goes
// (RFC 8259, as encoding/json does) and handing the caller only the
// members it asks for; everything else is skipped without being decoded.
// Values decode the way sigs.k8s.io/json's case-sensitive Unmarshal (the
// API server's reading) decodes them into Go fields: keys match exactly,
// a later duplicate wins, null leaves a string or bool as it was and sets
// a pointer, map or slice to nil, a map or slice decodes into what an
// earlier duplicate left. Admission reads a few fields of each workload;
// decoding the whole object into typed structs by reflection was most of
// the handler's time (issue 26).
type jsonScanner struct {
	data  []byte
	i     int
	depth int
}

// maxJSONDepth is encoding/json's nesting limit.
const maxJSONDepth = 10000

// document reads the one value data holds with value, then checks that
// nothing but whitespace follows it.
func (s *jsonScanner) document(value func() error) error {
	if err := value(); err != nil {
		return err
	}
	s.ws()
	if s.i < len(s.data) {
		return s.syntaxError("after the top-level value")
	}
	return nil
}

func (s *jsonScanner) ws() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte (0 at the end).
func (s *jsonScanner) peek() byte {
	s.ws()
	if s.i >= len(s.data) {
		return 0
	}
	return s.data[s.i]
}

func (s *jsonScanner) syntaxError(where string) error {
	if s.i >= len(s.data) {
		return fmt.Errorf("invalid JSON: unexpected end of input %s", where)
	}
	return fmt.Errorf("invalid JSON: unexpected %q at byte %d, %s", s.data[s.i], s.i, where)
}

// typeError says that the value at path is not of the type admission
// reads there; the value is skipped first so that a syntax error after it
// is the one reported.
func (s *jsonScanner) typeError(path, want string) error {
	got := "a number"
	switch s.peek() {
	case '"':
		got = "a string"
	case '{':
		got = "an object"
	case '[':
		got = "an array"
	case 't', 'f':
		got = "a boolean"
	case 'n':
		got = "null"
	}
	if err := s.skip(); err != nil {
		return err
	}
	return fmt.Errorf("%s is %s, want %s", path, got, want)
}

// null consumes a null literal when one is next.
func (s *jsonScanner) null() (bool, error) {
	if s.peek() != 'n' {
		return false, nil
	}
	return true, s.literal("null")
}

func (s *jsonScanner) literal(lit string) error {
	if len(s.data)-s.i < len(lit) || string(s.data[s.i:s.i+len(lit)]) != lit {
		for j := 0; j < len(lit) && s.i < len(s.data) && s.data[s.i] == lit[j]; j++ {
			s.i++
		}
		return s.syntaxError("in literal " + lit)
	}
	s.i += len(lit)
	return nil
}

func (s *jsonScanner) push() error {
	s.depth++
	if s.depth > maxJSONDepth {
		return errors.New("invalid JSON: nested too deeply")
	}
	return nil
}

// object reads the object at path, calling member with each key (escapes
// resolved) for it to read the value; null is no object and no error.
func (s *jsonScanner) object(path string, member func(key []byte) error) error {
	switch s.peek() {
	case '{':
	case 'n':
		return s.literal("null")
	default:
		return s.typeError(path, "an object")
	}
	if err := s.push(); err != nil {
		return err
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		s.depth--
		return nil
	}
	for {
		if s.peek() != '"' {
			return s.syntaxError("where an object key belongs")
		}
		key, err := s.key()
		if err != nil {
			return err
		}
		if s.peek() != ':' {
			return s.syntaxError("after an object key")
		}
		s.i++
		if err := member(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			s.depth--
			return nil
		default:
			return s.syntaxError("after an object member")
		}
	}
}

// array reads the array at path, calling elem with each index for it to
// read the element; null is an empty array's absence: isNull tells.
func (s *jsonScanner) array(path string, elem func(i int) error) (n int, isNull bool, err error) {
	switch s.peek() {
	case '[':
	case 'n':
		return 0, true, s.literal("null")
	default:
		return 0, false, s.typeError(path, "an array")
	}
	if err := s.push(); err != nil {
		return 0, false, err
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		s.depth--
		return 0, false, nil
	}
	for {
		if err := elem(n); err != nil {
			return n, false, err
		}
		n++
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			s.depth--
			return n, false, nil
		default:
			return n, false, s.syntaxError("after an array element")
		}
	}
}

// key reads an object key: its bytes as they are when it has no escapes
// (no allocation), else unquoted.
func (s *jsonScanner) key() ([]byte, error) {
	start := s.i
	plain, err := s.skipString()
	if err != nil {
		return nil, err
	}
	if plain {
		return s.data[start+1 : s.i-1], nil
	}
	var k string
	if err := kjson.UnmarshalCaseSensitivePreserveInts(s.data[start:s.i], &k); err != nil {
		return nil, err
	}
	return []byte(k), nil
}

// str reads a string or null at path (isNull: the field keeps its value).
func (s *jsonScanner) str(path string) (v string, isNull bool, err error) {
	switch s.peek() {
	case '"':
	case 'n':
		return "", true, s.literal("null")
	default:
		return "", false, s.typeError(path, "a string")
	}
	start := s.i
	plain, err := s.skipString()
	if err != nil {
		return "", false, err
	}
	if raw := s.data[start+1 : s.i-1]; plain || utf8.Valid(raw) && !hasEscape(raw) {
		return string(raw), false, nil
	}
	// Escapes or invalid UTF-8: unquoted exactly as encoding/json does
	// (invalid bytes become U+FFFD).
	var u string
	if err := kjson.UnmarshalCaseSensitivePreserveInts(s.data[start:s.i], &u); err != nil {
		return "", false, err
	}
	return u, false, nil
}

func hasEscape(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

// int32 reads an integer that fits int32, or null, at path.
func (s *jsonScanner) int32(path string) (v int32, isNull bool, err error) {
	switch c := s.peek(); {
	case c == '-' || c >= '0' && c <= '9':
	case c == 'n':
		return 0, true, s.literal("null")
	default:
		return 0, false, s.typeError(path, "an integer")
	}
	start := s.i
	if err := s.skipNumber(); err != nil {
		return 0, false, err
	}
	n, err := strconv.ParseInt(string(s.data[start:s.i]), 10, 32)
	if err != nil {
		return 0, false, fmt.Errorf("%s is %s, want an integer of 32 bits", path, s.data[start:s.i])
	}
	return int32(n), false, nil
}

// boolean reads true, false or null at path.
func (s *jsonScanner) boolean(path string) (v, isNull bool, err error) {
	switch s.peek() {
	case 't':
		return true, false, s.literal("true")
	case 'f':
		return false, false, s.literal("false")
	case 'n':
		return false, true, s.literal("null")
	}
	return false, false, s.typeError(path, "a boolean")
}

// span skips the next value and returns its bytes (a slice of data).
func (s *jsonScanner) span() ([]byte, error) {
	s.ws()
	start := s.i
	if err := s.skip(); err != nil {
		return nil, err
	}
	return s.data[start:s.i], nil
}

// decode decodes the next value into v with sigs.k8s.io/json, for the few
// fields whose every detail admission needs (owner references, a
// Rollout's workloadRef, valueFrom, envFrom): rare, and small.
func (s *jsonScanner) decode(path string, v any) error {
	raw, err := s.span()
	if err != nil {
		return err
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// skip validates and skips the next value.
func (s *jsonScanner) skip() error {
	switch c := s.peek(); {
	case c == '{':
		return s.object("", func([]byte) error { return s.skip() })
	case c == '[':
		_, _, err := s.array("", func(int) error { return s.skip() })
		return err
	case c == '"':
		_, err := s.skipString()
		return err
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return s.skipNumber()
	}
	return s.syntaxError("where a value belongs")
}

// skipString skips the string at s.i (its opening quote); plain: it has no
// escapes and is ASCII.
func (s *jsonScanner) skipString() (plain bool, err error) {
	s.i++
	plain = true
	for s.i < len(s.data) {
		for s.i < len(s.data) && plainStringByte[s.data[s.i]] {
			s.i++
		}
		if s.i >= len(s.data) {
			break
		}
		c := s.data[s.i]
		switch {
		case c == '"':
			s.i++
			return plain, nil
		case c == '\\':
			plain = false
			s.i++
			if s.i >= len(s.data) {
				return false, s.syntaxError("in a string escape")
			}
			switch s.data[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				s.i++
				for range 4 {
					if s.i >= len(s.data) || !isHex(s.data[s.i]) {
						return false, s.syntaxError("in a \\u escape")
					}
					s.i++
				}
			default:
				return false, s.syntaxError("in a string escape")
			}
		case c < 0x20:
			return false, s.syntaxError("in a string")
		default:
			if c >= utf8.RuneSelf {
				plain = false
			}
			s.i++
		}
	}
	return false, s.syntaxError("in a string")
}

// plainStringByte: the byte stands for itself in a JSON string and is
// ASCII (not a quote, a backslash, a control character or part of a
// multi-byte character).
var plainStringByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// skipNumber skips -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *jsonScanner) skipNumber() error {
	if s.data[s.i] == '-' {
		s.i++
	}
	digits := func() error {
		if s.i >= len(s.data) || !isDigit(s.data[s.i]) {
			return s.syntaxError("in a number")
		}
		for s.i < len(s.data) && isDigit(s.data[s.i]) {
			s.i++
		}
		return nil
	}
	if s.i < len(s.data) && s.data[s.i] == '0' {
		s.i++
	} else if err := digits(); err != nil {
		return err
	}
	if s.i < len(s.data) && s.data[s.i] == '.' {
		s.i++
		if err := digits(); err != nil {
			return err
		}
	}
	if s.i < len(s.data) && (s.data[s.i] == 'e' || s.data[s.i] == 'E') {
		s.i++
		if s.i < len(s.data) && (s.data[s.i] == '+' || s.data[s.i] == '-') {
			s.i++
		}
		if err := digits(); err != nil {
			return err
		}
	}
	return nil
}
