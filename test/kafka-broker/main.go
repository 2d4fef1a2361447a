// Command kafka-broker runs franz-go's kfake as a standalone Kafka broker
// process, for the end-to-end suite (test/e2e), the real-node tier
// (test/node: consumer pods and the manager's pods connect to it) and `make
// demo`: clients talk to it over TCP exactly as to a real broker, and the
// suites can stop it (SIGTERM) and start it again on the same port.
//
//	kafka-broker --listen 127.0.0.1:9092 [--advertise HOST:PORT] \
//	  [--data-dir DIR] [--broker-config offset.retention.ms=2000 ...]
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
// survives a restart.
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
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
	listen := flag.String("listen", "127.0.0.1:9092", "host:port to listen on (any local address)")
	advertise := flag.String("advertise", "", "host:port clients are told to connect to; default the --listen address")
	dataDir := flag.String("data-dir", "", "directory to persist state in, so that it survives a restart")
	logLevel := flag.String("log-level", "none", "kfake log level: none, error, warn, info, debug")
	configs := configFlag{}
	flag.Var(configs, "broker-config", "broker config key=value (repeatable), e.g. offset.retention.ms=2000")
	flag.Parse()

	listenAddr, port, err := parseAddr("--listen", *listen)
	if err != nil {
		usage("%v", err)
	}
	advertised := listenAddr
	if *advertise != "" {
		if advertised, _, err = parseAddr("--advertise", *advertise); err != nil {
			usage("%v", err)
		}
	}
	if ip := net.ParseIP(hostOf(advertised)); hostOf(advertised) == "" || (ip != nil && ip.IsUnspecified()) {
		if *advertise == "" {
			usage("--listen %q is a wildcard address, which clients cannot connect to: pass --advertise HOST:PORT, the address they reach this host on", *listen)
		}
		usage("--advertise %q: clients cannot connect to a wildcard address; pass the address they reach this host on", advertised)
	}

	level, ok := map[string]kfake.LogLevel{
		"none": kfake.LogLevelNone, "error": kfake.LogLevelError, "warn": kfake.LogLevelWarn,
		"info": kfake.LogLevelInfo, "debug": kfake.LogLevelDebug,
	}[strings.ToLower(*logLevel)]
	if !ok {
		usage("--log-level %q: use none, error, warn, info or debug", *logLevel)
	}
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(port),
		// kfake always asks for 127.0.0.1:<port>; listen where --listen
		// says, and advertise --advertise (kfake advertises the listener's
		// address).
		kfake.ListenFn(func(network, _ string) (net.Listener, error) {
			l, err := net.Listen(network, listenAddr)
			if err != nil {
				return nil, err
			}
			return advertisedListener{Listener: l, addr: advertisedAddr(advertised)}, nil
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
		fmt.Fprintf(os.Stderr, "kafka-broker: starting kfake on %s: %v\n", listenAddr, err)
		os.Exit(1)
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
