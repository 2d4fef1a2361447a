// Command kafka-broker runs franz-go's kfake as a standalone Kafka cluster
// process, for the end-to-end suite (test/e2e), the real-node tier
// (test/node: consumer pods and the manager's pods connect to it), `make
// demo` and `make bench-scale` (test/scale): clients talk to it over TCP
// exactly as to a real cluster, and the suites can stop it (SIGTERM) and
// start it again on the same ports.
//
//	kafka-broker --listen 127.0.0.1:9092[,127.0.0.1:9093,...] [--advertise HOST:PORT[,...]] \
//	  [--data-dir DIR] [--broker-config offset.retention.ms=2000 ...] [--stats-addr 127.0.0.1:PORT]
//
// One broker listens on each --listen address (a cluster of that many
// brokers).
//
// --listen takes any local address. Kafka clients connect to the address the
// broker advertises in its metadata, not to the bootstrap address, so the
// broker advertises --advertise (default: the --listen address; required
// when --listen is a wildcard such as 0.0.0.0, which no client can dial).
// Pods on a node reach it on the node's address, e.g. --listen
// 192.0.2.2:9092.
//
// It prints "listening on ADDR" (the advertised address) once it accepts
// connections and runs until SIGTERM or SIGINT. With --data-dir the
// broker's state (topics, records, log start offsets, committed offsets)
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
	listen := flag.String("listen", "127.0.0.1:9092", "host:port to listen on (any local address), one per broker, comma-separated")
	advertise := flag.String("advertise", "", "host:port clients are told to connect to, one per --listen address; default the --listen addresses")
	dataDir := flag.String("data-dir", "", "directory to persist state in, so that it survives a restart")
	logLevel := flag.String("log-level", "none", "kfake log level: none, error, warn, info, debug")
	statsAddr := flag.String("stats-addr", "", "host:port to serve request counts by Kafka API on (GET /requests); empty: not counted")
	configs := configFlag{}
	flag.Var(configs, "broker-config", "broker config key=value (repeatable), e.g. offset.retention.ms=2000")
	flag.Parse()
	// kfake finalizes group.version 1 (a 4.x broker), on which a classic
	// group may be converted to a consumer group and its commits are dated
	// (the observer reads the feature from ApiVersions). The end-to-end and
	// node scenarios replay the seeds' classic-only brokers (seed 003's
	// 3.5.1): unless told otherwise, the broker says the consumer protocol
	// is off, as group.coordinator.rebalance.protocols=classic does on 3.x
	// and 4.x alike.
	if _, ok := configs["group.coordinator.rebalance.protocols"]; !ok {
		configs["group.coordinator.rebalance.protocols"] = "classic"
	}

	// kfake asks for 127.0.0.1:<port> for each broker: the port says
	// which --listen (and --advertise) address the broker is.
	listenAddrs := strings.Split(*listen, ",")
	var advertiseAddrs []string
	if *advertise != "" {
		if advertiseAddrs = strings.Split(*advertise, ","); len(advertiseAddrs) != len(listenAddrs) {
			usage("--advertise %q: give one address per --listen address (%d)", *advertise, len(listenAddrs))
		}
	}
	type broker struct{ listen, advertised string }
	brokers := map[int]broker{}
	var ports []int
	for i, a := range listenAddrs {
		listenAddr, port, err := parseAddr("--listen", strings.TrimSpace(a))
		if err != nil {
			usage("%v", err)
		}
		if _, dup := brokers[port]; dup {
			usage("--listen %q: port %d is given twice", *listen, port)
		}
		advertised := listenAddr
		if advertiseAddrs != nil {
			if advertised, _, err = parseAddr("--advertise", strings.TrimSpace(advertiseAddrs[i])); err != nil {
				usage("%v", err)
			}
		}
		if ip := net.ParseIP(hostOf(advertised)); hostOf(advertised) == "" || (ip != nil && ip.IsUnspecified()) {
			if advertiseAddrs == nil {
				usage("--listen %q is a wildcard address, which clients cannot connect to: pass --advertise HOST:PORT, the address they reach this host on", listenAddr)
			}
			usage("--advertise %q: clients cannot connect to a wildcard address; pass the address they reach this host on", advertised)
		}
		brokers[port] = broker{listenAddr, advertised}
		ports = append(ports, port)
	}

	level, ok := map[string]kfake.LogLevel{
		"none": kfake.LogLevelNone, "error": kfake.LogLevelError, "warn": kfake.LogLevelWarn,
		"info": kfake.LogLevelInfo, "debug": kfake.LogLevelDebug,
	}[strings.ToLower(*logLevel)]
	if !ok {
		usage("--log-level %q: use none, error, warn, info or debug", *logLevel)
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(len(ports)),
		kfake.Ports(ports...),
		// kfake always asks for 127.0.0.1:<port>; listen where --listen
		// says, and advertise --advertise (kfake advertises the listener's
		// address).
		kfake.ListenFn(func(network, addr string) (net.Listener, error) {
			_, p, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			port, _ := strconv.Atoi(p)
			b, ok := brokers[port]
			if !ok {
				return nil, fmt.Errorf("kfake asked for %s, which no --listen address has", addr)
			}
			l, err := net.Listen(network, b.listen)
			if err != nil {
				return nil, err
			}
			return advertisedListener{Listener: l, addr: advertisedAddr(b.advertised)}, nil
		}),
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
		fmt.Fprintf(os.Stderr, "kafka-broker: starting kfake on %s: %v\n", *listen, err)
		os.Exit(1)
	}
	if *statsAddr != "" {
		if err := serveStats(c, *statsAddr); err != nil {
			fmt.Fprintf(os.Stderr, "kafka-broker: --stats-addr %q: %v\n", *statsAddr, err)
			os.Exit(1)
		}
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	fmt.Printf("listening on %s\n", strings.Join(c.ListenAddrs(), ","))
	s := <-sigs
	fmt.Fprintf(os.Stderr, "kafka-broker: %v: shutting down\n", s)
	c.Close()
}

// parseAddr checks a host:port flag and returns it with its port.
func parseAddr(flagName, s string) (string, int, error) {
	_, portStr, err := net.SplitHostPort(s)
	if err != nil {
		return "", 0, fmt.Errorf("%s %q: %v (want HOST:PORT)", flagName, s, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("%s %q: the port must be 1-65535", flagName, s)
	}
	return s, port, nil
}

func hostOf(hostport string) string {
	h, _, _ := net.SplitHostPort(hostport)
	return h
}

// advertisedListener reports the address clients must dial as its own.
type advertisedListener struct {
	net.Listener
	addr advertisedAddr
}

func (l advertisedListener) Addr() net.Addr { return l.addr }

type advertisedAddr string

func (a advertisedAddr) Network() string { return "tcp" }
func (a advertisedAddr) String() string  { return string(a) }

func usage(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kafka-broker: "+format+"\n", args...)
	os.Exit(64)
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
