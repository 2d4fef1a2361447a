package clients

import (
	"flag"
	"os"
	"testing"
)

// Every test starts its own brokers and waits on their clocks (an offset
// expiry of a minute, retention in seconds) and on JVM starts, so the tests
// and their per-line subtests run side by side (t.Parallel): up to 8 at
// once unless -parallel says otherwise (the default, GOMAXPROCS, is 2 here,
// and the waits would queue: 12 minutes one after the other).
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", "8")
	}
	os.Exit(m.Run())
}
