package cluster

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Snapshot is what a node changes on the machine, read before it starts
// and after it is torn down: Leftovers compares the two. Everything here
// is read from the kernel and the file system, not from the harness's own
// records, so a component the harness lost track of still shows up.
type Snapshot struct {
	Mounts    []string          // mount points
	Links     []string          // network interfaces
	Chains    []string          // "iptables nat KUBE-SERVICES", ...: chains, and built-in chains whose policy is not ACCEPT
	Rules     []string          // "iptables nat -A POSTROUTING ...": every rule
	Sysctls   map[string]string // see sysctlsCompared
	Processes []string          // "pid name": processes of node binaries
	Cgroups   []string          // kubelet's cgroups (kubepods...) per controller
	Paths     []string          // entries of the folders the node's components write to outside the run folder
}

// sysctlsRestored are the sysctls the node's components set: the kubelet
// (vm.overcommit_memory, kernel.panic, kernel.panic_on_oops, kernel.keys.*,
// vm.panic_on_oom), kube-proxy (route_localnet, conntrack timeouts and
// limits) and the bridge CNI plugin (ip_forward). Teardown writes back what
// Start read.
var sysctlsRestored = []string{
	"net/ipv4/ip_forward",
	"net/ipv4/conf/all/route_localnet",
	"net/ipv4/conf/all/forwarding",
	"net/ipv6/conf/all/forwarding",
	"vm/overcommit_memory",
	"vm/panic_on_oom",
	"kernel/panic",
	"kernel/panic_on_oops",
	"kernel/keys/root_maxkeys",
	"kernel/keys/root_maxbytes",
	"net/netfilter/nf_conntrack_max",
	"net/netfilter/nf_conntrack_tcp_timeout_established",
	"net/netfilter/nf_conntrack_tcp_timeout_close_wait",
	"net/netfilter/nf_conntrack_tcp_be_liberal",
	"net/netfilter/nf_conntrack_udp_timeout",
	"net/netfilter/nf_conntrack_udp_timeout_stream",
	"net/bridge/bridge-nf-call-iptables",
	"net/bridge/bridge-nf-call-ip6tables",
}

// sysctlsCompared are the folders whose every sysctl the leftover check
// compares (wider than what is restored: a change nobody expected fails
// the check), minus values the kernel changes on its own.
var sysctlsCompared = []string{"kernel", "vm", "net/ipv4", "net/ipv4/conf/all", "net/ipv4/conf/default",
	"net/ipv6/conf/all", "net/ipv6/conf/default", "net/netfilter", "net/bridge", "kernel/keys"}

var sysctlsVolatile = []string{
	"kernel/random/", "kernel/ns_last_pid", "kernel/pty/nr", "kernel/perf_event_max_sample_rate",
	"kernel/tainted", "net/netfilter/nf_conntrack_count", "kernel/sched_", "vm/stat_refresh",
	"kernel/keys/gc_delay", "net/ipv4/tcp_mem", "net/ipv4/udp_mem", "kernel/hung_task",
	"kernel/nmi_watchdog",
}

// RunDirPrefix starts the name of every run folder (under os.TempDir()):
// a process whose command line names one belongs to a node, this run's or
// one a crashed run left behind.
const RunDirPrefix = "retention-guard-node-"

// watchedPaths are the folders outside the run folder the components write
// to whatever they are told (container log symlinks, the CNI result cache,
// containerd's fixed runtime folder, ...).
var watchedPaths = []string{"/var/lib/kubelet", "/var/log/containers", "/var/log/pods", "/var/lib/cni",
	"/run/containerd", "/var/run/kubernetes", "/opt/containerd", "/etc/cni/net.d", "/var/lib/containerd", "/run/netns"}

// cgroupControllers are the cgroup v1 hierarchies on these machines.
var cgroupControllers = []string{"cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids", "systemd"}

// TakeSnapshot reads the machine.
func TakeSnapshot() (*Snapshot, error) {
	s := &Snapshot{Sysctls: map[string]string{}}
	var err error
	if s.Mounts, err = mountPoints(); err != nil {
		return nil, err
	}
	if s.Links, err = links(); err != nil {
		return nil, err
	}
	if s.Chains, s.Rules, err = iptablesState(); err != nil {
		return nil, err
	}
	for _, dir := range sysctlsCompared {
		entries, err := os.ReadDir(filepath.Join("/proc/sys", dir))
		if err != nil {
			continue // a folder this kernel lacks (no bridge module loaded)
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			key := dir + "/" + e.Name()
			if volatileSysctl(key) {
				continue
			}
			if v, ok := readSysctl(key); ok {
				s.Sysctls[key] = v
			}
		}
	}
	for _, key := range sysctlsRestored {
		if v, ok := readSysctl(key); ok {
			s.Sysctls[key] = v
		}
	}
	s.Processes = nodeProcesses()
	for _, c := range cgroupControllers {
		matches, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", c, "kubepods*"))
		s.Cgroups = append(s.Cgroups, matches...)
	}
	for _, dir := range watchedPaths {
		s.Paths = append(s.Paths, listTree(dir, 2)...)
	}
	return s, nil
}

func volatileSysctl(key string) bool {
	for _, v := range sysctlsVolatile {
		if strings.HasPrefix(key, v) {
			return true
		}
	}
	return false
}

func readSysctl(key string) (string, bool) {
	b, err := os.ReadFile(filepath.Join("/proc/sys", key))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

func writeSysctl(key, value string) error {
	return os.WriteFile(filepath.Join("/proc/sys", key), []byte(value+"\n"), 0o644)
}

// Leftovers lists what differs between before and s, one line each.
func (s *Snapshot) Leftovers(before *Snapshot) []string {
	var out []string
	added := func(what string, was, is []string) {
		for _, x := range is {
			if !slices.Contains(was, x) {
				out = append(out, fmt.Sprintf("%s left behind: %s", what, x))
			}
		}
	}
	added("mount", before.Mounts, s.Mounts)
	added("network interface", before.Links, s.Links)
	added("iptables chain", before.Chains, s.Chains)
	added("iptables rule", before.Rules, s.Rules)
	added("process", before.Processes, s.Processes)
	added("cgroup", before.Cgroups, s.Cgroups)
	added("path", before.Paths, s.Paths)
	keys := make([]string, 0, len(before.Sysctls))
	for k := range before.Sysctls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if now, ok := s.Sysctls[k]; ok && now != before.Sysctls[k] {
			out = append(out, fmt.Sprintf("sysctl changed: %s = %q, was %q", strings.ReplaceAll(k, "/", "."), now, before.Sysctls[k]))
		}
	}
	return out
}

func mountPoints() ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 4 {
			out = append(out, unescapeMount(fields[4]))
		}
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var c byte
			if _, err := fmt.Sscanf(s[i+1:i+4], "%03o", &c); err == nil {
				b.WriteByte(c)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func links() ([]string, error) {
	entries, err := os.ReadDir("/sys/class/net")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out, nil
}

// iptablesState lists the chains and rules of every table of iptables and
// ip6tables. A built-in chain counts only when its policy is not ACCEPT: a
// table the node's components created (iptables-nft cannot delete a table)
// keeps its empty built-in chains, which filter nothing.
func iptablesState() (chains, rules []string, err error) {
	for _, tool := range []string{"iptables", "ip6tables"} {
		save := tool + "-save"
		if _, err := exec.LookPath(save); err != nil {
			return nil, nil, fmt.Errorf("%s is not installed: run hack/install-deps.sh node", save)
		}
		b, err := exec.Command(save).Output()
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", save, err)
		}
		for _, t := range parseSave(string(b)) {
			for _, c := range t.chains {
				if c.policy == "-" {
					chains = append(chains, tool+" "+t.name+" "+c.name)
				} else if c.policy != "ACCEPT" {
					chains = append(chains, tool+" "+t.name+" "+c.name+" policy "+c.policy)
				}
			}
			for _, r := range t.rules {
				rules = append(rules, tool+" "+t.name+" "+r.line)
			}
		}
	}
	return chains, rules, nil
}

// nodeProcesses lists running processes of a node: those whose command
// line names a run folder (etcd, kube-apiserver, the kubelet, containerd and
// its shims, ... are all started with files there) and those in the
// kubelet's cgroups (the containers). Other control planes on the machine
// (envtest's) are not a node's.
func nodeProcesses() []string {
	entries, _ := os.ReadDir("/proc")
	prefix := filepath.Join(os.TempDir(), RunDirPrefix)
	var out []string
	for _, e := range entries {
		pid := e.Name()
		if pid[0] < '0' || pid[0] > '9' || pid == strconv.Itoa(os.Getpid()) {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", pid, "cmdline"))
		if err != nil || len(cmdline) == 0 {
			continue // gone, or a kernel thread
		}
		cgroups, _ := os.ReadFile(filepath.Join("/proc", pid, "cgroup"))
		if !strings.Contains(string(cmdline), prefix) && !strings.Contains(string(cgroups), "/kubepods") {
			continue
		}
		name, _, _ := strings.Cut(string(cmdline), "\x00")
		out = append(out, pid+" "+filepath.Base(name))
	}
	return out
}

// listTree lists dir and its entries down to depth levels.
func listTree(dir string, depth int) []string {
	if _, err := os.Lstat(dir); err != nil {
		return nil
	}
	out := []string{dir}
	if depth == 0 {
		return out
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return out
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		out = append(out, listTree(filepath.Join(dir, e.Name()), depth-1)...)
	}
	return out
}
