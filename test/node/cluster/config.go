package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Network layout of the node. The pod range is a bridge with host-local
// IPAM; Services get ClusterIPs from serviceCIDR, the first of which is the
// API server's own Service (kubernetes.default).
const (
	nodeName       = "rg-node"
	bridgeName     = "rgnode0"
	podCIDR        = "10.244.0.0/24"
	clusterCIDR    = "10.244.0.0/16"
	serviceCIDR    = "10.96.0.0/16"
	apiServiceIP   = "10.96.0.1"
	apiServerPort  = 6443
	etcdClientPort = 2379
	etcdPeerPort   = 2380
	kubeletPort    = 10250
	kubeletHealthz = 10248
	cniNetworkName = "rg-node"
	// PauseImage is containerd's sandbox_image: the harness imports it
	// before the kubelet starts (no registry is reachable).
	PauseImage = "retentionguard.local/pause:1"
)

// writeKubeconfig writes a kubeconfig for the given client certificate.
func writeKubeconfig(path, server, caFile string, cert issued) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["node"] = &clientcmdapi.Cluster{Server: server, CertificateAuthority: caFile}
	cfg.AuthInfos["user"] = &clientcmdapi.AuthInfo{ClientCertificate: cert.Cert, ClientKey: cert.Key}
	cfg.Contexts["node"] = &clientcmdapi.Context{Cluster: "node", AuthInfo: "user", Namespace: "default"}
	cfg.CurrentContext = "node"
	return clientcmd.WriteToFile(*cfg, path)
}

// containerdConfig is containerd 1.6's configuration with everything under
// the run folder, and the settings REAL-NODE.md found required on these
// machines: restrict_oom_score_adj (root lacks CAP_SYS_RESOURCE: a negative
// oom_score_adj kills every sandbox), netns under the state dir, cgroupfs.
func containerdConfig(l layout) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = [
  "io.containerd.internal.v1.opt",
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp",
]

[grpc]
  address = %[3]q

[ttrpc]
  address = %[4]q

[debug]
  address = ""

[metrics]
  address = ""

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[5]q
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  disable_apparmor = true
  enable_selinux = false
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"

  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    discard_unpacked_layers = false

    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false

  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[6]q
    conf_dir = %[7]q
    max_conf_num = 1
`, l.containerdRoot, l.containerdState, l.containerdSocket, l.containerdSocket+".ttrpc", PauseImage, l.cniBinDir, l.cniConfDir)
}

// cniConfig is a bridge network with host-local IPAM (its data under the
// run folder), masquerading and port mapping.
func cniConfig(l layout) ([]byte, error) {
	conf := map[string]any{
		"cniVersion": "0.4.0",
		"name":       cniNetworkName,
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      bridgeName,
				"isGateway":   true,
				"ipMasq":      true,
				"hairpinMode": true,
				"ipam": map[string]any{
					"type":    "host-local",
					"ranges":  [][]map[string]string{{{"subnet": podCIDR}}},
					"routes":  []map[string]string{{"dst": "0.0.0.0/0"}},
					"dataDir": l.cniIPAMDir,
				},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	return json.MarshalIndent(conf, "", "  ")
}

// kubeletConfig is the KubeletConfiguration with the settings REAL-NODE.md
// found required here: cgroup v1 allowed, cgroupfs, swap tolerated,
// eviction and image GC relaxed (the disk is shared with other work).
func kubeletConfig(l layout, nodeIP string) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
failSwapOn: false
address: %[1]s
port: %[2]d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %[3]d
containerRuntimeEndpoint: unix://%[4]s
podLogsDir: %[5]s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %[6]s
authorization:
  mode: Webhook
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
evictionHard:
  nodefs.available: "1%%"
  imagefs.available: "1%%"
  memory.available: "100Mi"
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
maxPods: 110
syncFrequency: 10s
fileCheckFrequency: 10s
nodeStatusUpdateFrequency: 5s
shutdownGracePeriod: 0s
`, nodeIP, kubeletPort, kubeletHealthz, l.containerdSocket, l.podLogsDir, l.caFile)
}

// layout is where everything of one run lives.
type layout struct {
	run              string
	logs             string
	pki              string
	caFile           string
	etcdData         string
	containerdRoot   string
	containerdState  string
	containerdSocket string
	containerdConfig string
	cniBinDir        string
	cniConfDir       string
	cniIPAMDir       string
	kubeletRoot      string
	kubeletConfig    string
	podLogsDir       string
	kubeconfigs      string
	images           string
}

func newLayout(run string) layout {
	j := func(p ...string) string { return filepath.Join(append([]string{run}, p...)...) }
	return layout{
		run:              run,
		logs:             j("logs"),
		pki:              j("pki"),
		caFile:           j("pki", "ca.crt"),
		etcdData:         j("etcd"),
		containerdRoot:   j("containerd", "root"),
		containerdState:  j("containerd", "state"),
		containerdSocket: j("containerd", "containerd.sock"),
		containerdConfig: j("containerd", "config.toml"),
		cniBinDir:        "/usr/lib/cni", // Debian's containernetworking-plugins
		cniConfDir:       j("cni", "net.d"),
		cniIPAMDir:       j("cni", "ipam"),
		kubeletRoot:      j("kubelet"),
		kubeletConfig:    j("kubelet-config.yaml"),
		podLogsDir:       j("pod-logs"),
		kubeconfigs:      j("kubeconfig"),
		images:           j("images"),
	}
}

func (l layout) mkdirs() error {
	for _, d := range []string{l.logs, l.pki, l.etcdData, l.containerdRoot, l.containerdState, l.cniConfDir, l.cniIPAMDir, l.kubeletRoot, l.podLogsDir, l.kubeconfigs, l.images} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}
