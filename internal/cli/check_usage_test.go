package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Execute(args, &out, &errb)
	return code, out.String(), errb.String()
}

// Usage errors exit 64 before any connection and say what to do.
func TestCheckUsageErrors(t *testing.T) {
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"check", "--bootstrap-server", "127.0.0.1:1", "--group", "g", "--topic", "t", "--recovery-window", "72h"}
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"no flags", []string{"check"}, []string{"--bootstrap-server is required", "--group is required", "--topic is required", "--recovery-window is required"}},
		{"bad server", replace(base, "127.0.0.1:1", "kafka"), []string{`--bootstrap-server "kafka"`, "HOST:PORT"}},
		{"bad port", replace(base, "127.0.0.1:1", "kafka:99999"), []string{"between 1 and 65535"}},
		{"window in days", replace(base, "72h", "10d"), []string{"--recovery-window"}},
		{"negative window", replace(base, "72h", "-1h"), []string{"must be positive", "240h"}},
		{"bad output", append(base, "--output", "yaml"), []string{`--output "yaml"`, "table or json"}},
		{"duplicate topic", append(base, "--topic", "t"), []string{`--topic "t" is given twice`}},
		{"cert without key", append(base, "--tls-cert", "c.pem"), []string{"--tls-cert and --tls-key go together"}},
		{"bad mechanism", append(base, "--sasl-mechanism", "GSSAPI", "--sasl-username", "u", "--sasl-password-file", pw), []string{`--sasl-mechanism "GSSAPI"`, "SCRAM-SHA-512"}},
		{"mechanism without password", append(base, "--sasl-mechanism", "PLAIN", "--sasl-username", "u"), []string{"--sasl-password-file is required"}},
		{"missing password file", append(base, "--sasl-mechanism", "PLAIN", "--sasl-username", "u", "--sasl-password-file", "/nonexistent/pw"), []string{"--sasl-password-file: cannot read /nonexistent/pw"}},
		{"missing CA file", append(base, "--tls-ca", "/nonexistent/ca.crt"), []string{"/nonexistent/ca.crt"}},
		{"cursor driver without its file", append(base, "--cursor-driver", "postgres"), []string{"--cursor-dsn-file is required with --cursor-driver"}},
		{"cursor file without its driver", append(base, "--cursor-dsn-file", pw), []string{"--cursor-driver is required with --cursor-dsn-file"}},
		{"unknown cursor driver", append(base, "--cursor-driver", "oracle", "--cursor-dsn-file", pw), []string{`--cursor-driver "oracle"`, "postgres or mysql"}},
		{"unknown resume-from", append(base, "--cursor-driver", "postgres", "--cursor-dsn-file", pw, "--resume-from", "earliest"), []string{`--resume-from "earliest"`, "group", "cursor"}},
		{"resume-from without a cursor", append(base, "--resume-from", "cursor"), []string{"--resume-from needs a business cursor"}},
		{"cursor query without the parameter", append(base, "--cursor-driver", "mysql", "--cursor-dsn-file", pw, "--cursor-query", "SELECT 1 AS `partition`, 2 AS next_offset"), []string{"one parameter: ? for mysql"}},
		{"cursor query that is not a SELECT", append(base, "--cursor-driver", "postgres", "--cursor-dsn-file", pw, "--cursor-query", "DELETE FROM c WHERE g = $1"), []string{"must be a SELECT"}},
		{"several topics without a topic column", append(base, "--topic", "t2", "--cursor-driver", "postgres", "--cursor-dsn-file", pw), []string{"topic column is required with several --topic"}},
		{"missing cursor file", append(base, "--cursor-driver", "postgres", "--cursor-dsn-file", "/nonexistent/dsn"), []string{"--cursor-dsn-file: cannot read /nonexistent/dsn"}},
		{"unparsable connection string", append(base, "--cursor-driver", "mysql", "--cursor-dsn-file", pw), []string{"does not parse as a MySQL/MariaDB DSN"}},
		{"unknown flag", append(base, "--frobnicate"), []string{"unknown flag: --frobnicate"}},
		{"positional argument", append(base, "extra"), []string{"unknown command"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tc.args...)
			if code != ExitUsage {
				t.Fatalf("exit code %d, want %d (usage)\nstderr: %s", code, ExitUsage, stderr)
			}
			if stdout != "" {
				t.Errorf("a usage error printed to stdout: %q", stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "secret") {
				t.Errorf("the password reached stderr:\n%s", stderr)
			}
		})
	}
}

func replace(args []string, old, new string) []string {
	out := append([]string(nil), args...)
	for i, a := range out {
		if a == old {
			out[i] = new
		}
	}
	return out
}

func TestVersionAndUnknownCommand(t *testing.T) {
	code, stdout, _ := run(t, "version")
	if code != 0 || !strings.HasPrefix(stdout, "retention-guard ") {
		t.Fatalf("version: code %d, output %q", code, stdout)
	}
	code, _, stderr := run(t, "frobnicate")
	if code != ExitUsage || !strings.Contains(stderr, `unknown command "frobnicate"`) {
		t.Fatalf("unknown command: code %d, stderr %q", code, stderr)
	}
}
