package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// sweep removes from the machine what a node left there, comparing with
// the snapshot taken before it started: processes whose command line names
// the run folder (shims included) and the containers in the kubelet's
// cgroups, mounts, iptables rules and chains, the bridge and veths,
// cgroups, changed sysctls, and files outside the run folder; then the run
// folder. It runs after the components were stopped in order (Stop), and
// alone on what a crashed run left behind (the next run's reaper). Every
// step runs even when one fails; the errors are joined.
func sweep(ctx context.Context, runDir string, before *Snapshot, logf func(string, ...any)) error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	add(killNodeProcesses(runDir, logf))
	add(unmountAll(runDir, before, logf))
	add(sweepIptables(ctx, before, logf))
	add(deleteLinks(ctx, before, logf))
	add(removeCgroups(before, logf))
	add(restoreSysctls(before, logf))
	add(removePaths(runDir, before, logf))
	if mounts, _ := mountPoints(); slices.ContainsFunc(mounts, func(m string) bool { return under(runDir, m) }) {
		add(fmt.Errorf("not removing %s: something is still mounted under it", runDir))
	} else if err := os.RemoveAll(runDir); err != nil {
		add(fmt.Errorf("removing the run folder: %w", err))
	}
	return errors.Join(errs...)
}

func under(dir, path string) bool { return path == dir || strings.HasPrefix(path, dir+"/") }

// killNodeProcesses kills (SIGKILL) what still runs of the node: processes
// whose command line names runDir (a component, a containerd shim) and
// processes in the kubelet's cgroups (containers). It waits until they are
// gone.
func killNodeProcesses(runDir string, logf func(string, ...any)) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		var left []string
		for _, p := range nodeProcessesOf(runDir) {
			pid, _ := strconv.Atoi(strings.Fields(p)[0])
			_ = syscall.Kill(pid, syscall.SIGKILL)
			left = append(left, p)
		}
		if len(left) == 0 {
			return nil
		}
		logf("killed leftover processes: %s", strings.Join(left, ", "))
		if time.Now().After(deadline) {
			return fmt.Errorf("processes still running after SIGKILL: %s", strings.Join(left, ", "))
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// nodeProcessesOf is nodeProcesses restricted to one run folder (plus the
// containers in the kubelet's cgroups).
func nodeProcessesOf(runDir string) []string {
	var out []string
	for _, p := range nodeProcesses() {
		pid := strings.Fields(p)[0]
		cmdline, _ := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		cgroups, _ := os.ReadFile(filepath.Join("/proc", pid, "cgroup"))
		if strings.Contains(string(cmdline), runDir) || strings.Contains(string(cgroups), "/kubepods") {
			out = append(out, p)
		}
	}
	return out
}

// unmountAll unmounts, deepest first, every mount under runDir and every
// mount that appeared under the folders the node writes to.
func unmountAll(runDir string, before *Snapshot, logf func(string, ...any)) error {
	var errs []error
	for attempt := 0; attempt < 5; attempt++ {
		mounts, err := mountPoints()
		if err != nil {
			return err
		}
		var todo []string
		for _, m := range mounts {
			if under(runDir, m) || (!slices.Contains(before.Mounts, m) && underWatched(m)) {
				todo = append(todo, m)
			}
		}
		if len(todo) == 0 {
			return nil
		}
		// Deepest (and latest) first.
		slices.Reverse(todo)
		sort.SliceStable(todo, func(i, j int) bool { return strings.Count(todo[i], "/") > strings.Count(todo[j], "/") })
		errs = errs[:0]
		for _, m := range todo {
			if err := syscall.Unmount(m, syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
			}
		}
		logf("unmounted %d mounts", len(todo))
	}
	return errors.Join(errs...)
}

func underWatched(path string) bool {
	for _, w := range watchedPaths {
		if under(w, path) {
			return true
		}
	}
	return false
}

// sweepIptables removes, in every table of iptables and ip6tables, the
// rules and chains that did not exist before (KUBE-*, CNI-*, the rules
// jumping to them), in one iptables-restore --noflush per table: first the
// new rules of old chains, then the new chains, flushed, then deleted.
func sweepIptables(ctx context.Context, before *Snapshot, logf func(string, ...any)) error {
	var errs []error
	for _, tool := range []string{"iptables", "ip6tables"} {
		out, err := exec.CommandContext(ctx, tool+"-save").Output()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s-save: %w", tool, err))
			continue
		}
		for _, t := range parseSave(string(out)) {
			var added []string
			for _, c := range t.chains {
				if c.policy == "-" && !slices.Contains(before.Chains, tool+" "+t.name+" "+c.name) {
					added = append(added, c.name)
				}
			}
			var script strings.Builder
			deleted := 0
			for _, r := range t.rules {
				if !slices.Contains(added, r.chain) && !slices.Contains(before.Rules, tool+" "+t.name+" "+r.line) {
					fmt.Fprintf(&script, "-D %s\n", strings.TrimPrefix(r.line, "-A "))
					deleted++
				}
			}
			for _, c := range added {
				fmt.Fprintf(&script, "-F %s\n", c)
			}
			for _, c := range added {
				fmt.Fprintf(&script, "-X %s\n", c)
			}
			if script.Len() == 0 {
				continue
			}
			cmd := exec.CommandContext(ctx, tool+"-restore", "--noflush")
			cmd.Stdin = strings.NewReader("*" + t.name + "\n" + script.String() + "COMMIT\n")
			if b, err := cmd.CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("%s-restore (table %s): %w: %s", tool, t.name, err, b))
				continue
			}
			logf("removed from %s table %s: %d rules, chains %s", tool, t.name, deleted, strings.Join(added, " "))
		}
	}
	return errors.Join(errs...)
}

type saveTable struct {
	name   string
	chains []saveChain
	rules  []saveRule
}

type saveChain struct {
	name, policy string // policy "-" for a user-defined chain
}

type saveRule struct {
	line, chain string
}

// parseSave reads iptables-save output.
func parseSave(s string) []saveTable {
	var tables []saveTable
	for _, line := range strings.Split(s, "\n") {
		switch {
		case strings.HasPrefix(line, "*"):
			tables = append(tables, saveTable{name: line[1:]})
		case len(tables) == 0:
		case strings.HasPrefix(line, ":"):
			f := strings.Fields(line[1:])
			c := saveChain{name: f[0], policy: "-"}
			if len(f) > 1 {
				c.policy = f[1]
			}
			tables[len(tables)-1].chains = append(tables[len(tables)-1].chains, c)
		case strings.HasPrefix(line, "-A "):
			tables[len(tables)-1].rules = append(tables[len(tables)-1].rules, saveRule{line: line, chain: strings.Fields(line)[1]})
		}
	}
	return tables
}

// deleteLinks deletes the node's bridge and every veth that appeared.
func deleteLinks(ctx context.Context, before *Snapshot, logf func(string, ...any)) error {
	now, err := links()
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range now {
		if slices.Contains(before.Links, l) || (l != bridgeName && !strings.HasPrefix(l, "veth")) {
			continue
		}
		if _, err := run(ctx, "ip", "link", "delete", l); err != nil {
			if _, statErr := os.Stat(filepath.Join("/sys/class/net", l)); statErr == nil {
				errs = append(errs, err)
				continue
			}
		}
		logf("deleted network interface %s", l)
	}
	return errors.Join(errs...)
}

// removeCgroups removes the kubelet's cgroups (kubepods and below), leaves
// first, in every controller; they are empty once the containers are gone.
func removeCgroups(before *Snapshot, logf func(string, ...any)) error {
	var errs []error
	n := 0
	for _, c := range cgroupControllers {
		roots, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", c, "kubepods*"))
		for _, root := range roots {
			if slices.Contains(before.Cgroups, root) {
				continue
			}
			var dirs []string
			_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
				if err == nil && d.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			slices.Reverse(dirs)
			for _, d := range dirs {
				if err := syscall.Rmdir(d); err != nil && !errors.Is(err, syscall.ENOENT) {
					errs = append(errs, fmt.Errorf("removing cgroup %s: %w", d, err))
				} else {
					n++
				}
			}
		}
	}
	if n > 0 {
		logf("removed %d cgroups", n)
	}
	return errors.Join(errs...)
}

// restoreSysctls writes back the sysctls the node's components change.
func restoreSysctls(before *Snapshot, logf func(string, ...any)) error {
	var errs []error
	for _, key := range sysctlsRestored {
		was, ok := before.Sysctls[key]
		if !ok {
			continue
		}
		if now, ok := readSysctl(key); ok && now != was {
			if err := writeSysctl(key, was); err != nil {
				errs = append(errs, fmt.Errorf("restoring %s to %q: %w", key, was, err))
				continue
			}
			logf("restored %s = %s (was %s)", strings.ReplaceAll(key, "/", "."), was, now)
		}
	}
	return errors.Join(errs...)
}

// removePaths removes what appeared in the watched folders outside the run
// folder (container log symlinks, the CNI cache, containerd's runtime
// folder), each entry that was not there before.
func removePaths(runDir string, before *Snapshot, logf func(string, ...any)) error {
	var errs []error
	var removed []string
	for _, dir := range watchedPaths {
		for _, p := range listTree(dir, 2) {
			if slices.Contains(before.Paths, p) {
				continue
			}
			if err := os.RemoveAll(p); err != nil {
				errs = append(errs, fmt.Errorf("removing %s: %w", p, err))
				continue
			}
			removed = append(removed, p)
		}
	}
	if len(removed) > 0 {
		logf("removed %s", strings.Join(removed, ", "))
	}
	return errors.Join(errs...)
}
