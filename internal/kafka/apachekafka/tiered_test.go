package apachekafka

import (
	"path/filepath"
	"strings"
	"testing"
)

// WithTieredStorage's server.properties: the remote tier on a folder of the
// node's own (removed with it), the metadata manager's clients on the
// client listener (as the SASL admin when the listener is SASL: without
// credentials its clients never connect and no segment is ever copied),
// and __remote_log_metadata sized to the cluster. The broker's side of it
// is test/realkafka/records' tiered tests.
func TestTieredStorageProperties(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sasl     *SASL
		listener string
	}{
		{"plaintext", nil, "PLAINTEXT"},
		{"sasl", &SASL{AdminUser: "admin", AdminPassword: "Adm1n-tiered"}, "SASL_PLAINTEXT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Broker{Dist: Dist{Version: "4.4.0"}, cfg: config{nodes: 1, props: map[string]string{}, tiered: true, sasl: tc.sasl}}
			n := &Node{ID: 1, Addr: "127.0.0.1:9092", ControllerAddr: "127.0.0.1:9093", dir: filepath.Join("node-1")}
			b.Nodes = []*Node{n}
			props := map[string]string{}
			for _, l := range strings.Split(strings.TrimSpace(b.properties(n)), "\n") {
				k, v, _ := strings.Cut(l, "=")
				props[k] = v
			}
			want := map[string]string{
				"remote.log.storage.system.enable":                         "true",
				"remote.log.storage.manager.class.name":                    "org.apache.kafka.server.log.remote.storage.LocalTieredStorage",
				"rsm.config.dir":                                           filepath.Join("node-1", "remote"),
				"remote.log.metadata.manager.listener.name":                tc.listener,
				"rlmm.config.remote.log.metadata.topic.replication.factor": "1",
				"rlmm.config.remote.log.metadata.topic.min.isr":            "1",
				"rlmm.config.remote.log.metadata.topic.num.partitions":     "1",
				"remote.log.manager.task.interval.ms":                      "1000",
			}
			for k, v := range want {
				if props[k] != v {
					t.Errorf("%s=%q, want %q", k, props[k], v)
				}
			}
			jaas := props["rlmm.config.remote.log.metadata.common.client.sasl.jaas.config"]
			if tc.sasl == nil && jaas != "" {
				t.Errorf("a PLAINTEXT broker's metadata manager is given SASL credentials: %q", jaas)
			}
			if tc.sasl != nil && (!strings.Contains(jaas, `username="admin"`) || props["rlmm.config.remote.log.metadata.common.client.sasl.mechanism"] != "PLAIN") {
				t.Errorf("the metadata manager's clients on a SASL listener: mechanism %q, jaas %q; want PLAIN as the admin",
					props["rlmm.config.remote.log.metadata.common.client.sasl.mechanism"], jaas)
			}
		})
	}
}
