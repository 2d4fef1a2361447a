package stack

import (
	"time"

	"github.com/retentionguard/retention-guard/internal/testca"
)

// writeServingCert generates a CA and a serving certificate for 127.0.0.1
// signed by it, writes tls.crt and tls.key (the names the manager's
// --webhook-cert-dir reads) into dir, and returns the CA in PEM: the
// webhook configuration's caBundle.
func writeServingCert(dir string) (caPEM []byte, err error) {
	ca, err := testca.New("retention-guard e2e CA", 24*time.Hour)
	if err != nil {
		return nil, err
	}
	if err := ca.WriteServing(dir, "127.0.0.1", "localhost"); err != nil {
		return nil, err
	}
	return ca.PEM, nil
}
