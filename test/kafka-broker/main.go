// Command kafka-broker runs franz-go's kfake as a standalone Kafka cluster
// process, for the end-to-end suite (test/e2e), `make demo` and `make
// bench-scale` (test/scale): the manager talks to it over TCP exactly as to
// a real cluster, and the suite can stop it (SIGTERM) and start it again on
// the same ports.
//
//	kafka-broker --listen 127.0.0.1:9092[,127.0.0.1:9093,...] [--data-dir DIR] \
//	  [--broker-config offset.retention.ms=2000 ...] [--stats-addr 127.0.0.1:PORT]
//
// One broker listens on each --listen address (a cluster of that many
// brokers). It prints "listening on ADDR[,ADDR...]" once it accepts
// connections and runs until SIGTERM or SIGINT. With --data-dir the
// cluster's state (topics, records, log start offsets, committed offsets)
// survives a restart. With --stats-addr it counts the requests it answers by
// Kafka API and serves the counts as JSON at http://ADDR/requests (the
// scale benchmark reads them: requests seen by the cluster, whoever sent
// them).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

type configFlag map[string]string

func (f configFlag) String() string { return "" }

func (f configFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("expected key=value, got %q", s)
	}
	f[k] = v
	return nil
}

func main() {
	listen := flag.String("listen", "127.0.0.1:9092", "host:port to listen on, one per broker, comma-separated (kfake listens on 127.0.0.1)")
	dataDir := flag.String("data-dir", "", "directory to persist state in, so that it survives a restart")
	logLevel := flag.String("log-level", "none", "kfake log level: none, error, warn, info, debug")
	statsAddr := flag.String("stats-addr", "", "host:port to serve request counts by Kafka API on (GET /requests); empty: not counted")
	configs := configFlag{}
	flag.Var(configs, "broker-config", "broker config key=value (repeatable), e.g. offset.retention.ms=2000")
	flag.Parse()

	var ports []int
	for _, addr := range strings.Split(*listen, ",") {
		host, portStr, err := net.SplitHostPort(strings.TrimSpace(addr))
		if err != nil {
			fail("--listen %q: %v", addr, err)
		}
		if host != "127.0.0.1" && host != "localhost" {
			fail("--listen %q: kfake listens on 127.0.0.1 only", addr)
		}
		port, err := strconv.Atoi(portStr)
		if err != nil || port < 0 || port > 65535 {
			fail("--listen %q: bad port", addr)
		}
		ports = append(ports, port)
	}

	level := map[string]kfake.LogLevel{
		"none": kfake.LogLevelNone, "error": kfake.LogLevelError, "warn": kfake.LogLevelWarn,
		"info": kfake.LogLevelInfo, "debug": kfake.LogLevelDebug,
	}[strings.ToLower(*logLevel)]
	opts := []kfake.Opt{
		kfake.NumBrokers(len(ports)),
		kfake.Ports(ports...),
		kfake.WithLogger(kfake.BasicLogger(os.Stderr, level)),
	}
	if len(configs) > 0 {
		opts = append(opts, kfake.BrokerConfigs(configs))
	}
	if *dataDir != "" {
		opts = append(opts, kfake.DataDir(*dataDir))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fail("starting kfake: %v", err)
	}
	if *statsAddr != "" {
		if err := serveStats(c, *statsAddr); err != nil {
			fail("--stats-addr %q: %v", *statsAddr, err)
		}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	fmt.Printf("listening on %s\n", strings.Join(c.ListenAddrs(), ","))
	s := <-sigs
	fmt.Fprintf(os.Stderr, "kafka-broker: %v: shutting down\n", s)
	c.Close()
}

// serveStats counts every request the cluster handles by API name (a
// control function that observes and lets the cluster answer as usual) and
// serves the counts at /requests.
func serveStats(c *kfake.Cluster, addr string) error {
	var (
		mu     sync.Mutex
		counts = map[string]int64{}
	)
	c.Control(func(req kmsg.Request) (kmsg.Response, error, bool) {
		mu.Lock()
		counts[kmsg.NameForKey(req.Key())]++
		mu.Unlock()
		return nil, nil, false
	})
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /requests", func(w http.ResponseWriter, _ *http.Request) {
		mu.Lock()
		b, err := json.Marshal(counts)
		mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	})
	go func() { _ = http.Serve(l, mux) }()
	return nil
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kafka-broker: "+format+"\n", args...)
	os.Exit(2)
}
