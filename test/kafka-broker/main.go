// Command kafka-broker runs franz-go's kfake as a standalone Kafka broker
// process, for the end-to-end suite (test/e2e) and `make demo`: the manager
// talks to it over TCP exactly as to a real broker, and the suite can stop
// it (SIGTERM) and start it again on the same port.
//
//	kafka-broker --listen 127.0.0.1:9092 [--data-dir DIR] \
//	  [--broker-config offset.retention.ms=2000 ...]
//
// It prints "listening on ADDR" once it accepts connections and runs until
// SIGTERM or SIGINT. With --data-dir the broker's state (topics, records,
// log start offsets, committed offsets) survives a restart.
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
	listen := flag.String("listen", "127.0.0.1:9092", "host:port to listen on (kfake listens on 127.0.0.1)")
	dataDir := flag.String("data-dir", "", "directory to persist state in, so that it survives a restart")
	logLevel := flag.String("log-level", "none", "kfake log level: none, error, warn, info, debug")
	configs := configFlag{}
	flag.Var(configs, "broker-config", "broker config key=value (repeatable), e.g. offset.retention.ms=2000")
	flag.Parse()

	host, portStr, err := net.SplitHostPort(*listen)
	if err != nil {
		fail("--listen %q: %v", *listen, err)
	}
	if host != "127.0.0.1" && host != "localhost" {
		fail("--listen %q: kfake listens on 127.0.0.1 only", *listen)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		fail("--listen %q: bad port", *listen)
	}

	level := map[string]kfake.LogLevel{
		"none": kfake.LogLevelNone, "error": kfake.LogLevelError, "warn": kfake.LogLevelWarn,
		"info": kfake.LogLevelInfo, "debug": kfake.LogLevelDebug,
	}[strings.ToLower(*logLevel)]
	opts := []kfake.Opt{
		kfake.NumBrokers(1),
		kfake.Ports(port),
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
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	fmt.Printf("listening on %s\n", strings.Join(c.ListenAddrs(), ","))
	s := <-sigs
	fmt.Fprintf(os.Stderr, "kafka-broker: %v: shutting down\n", s)
	c.Close()
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "kafka-broker: "+format+"\n", args...)
	os.Exit(2)
}
