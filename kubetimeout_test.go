package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A Kubernetes API request without a deadline of its own ends after
// --kube-api-timeout (a hung API server held a worker, or the start,
// forever); a watch stays open past it.
func TestKubeRequestsWithoutADeadlineAreBounded(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("watch") == "true" {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			select { // an event, later than the timeout
			case <-time.After(time.Second):
				_, _ = io.WriteString(w, `{"type":"ADDED"}`)
			case <-r.Context().Done():
			}
			return
		}
		select { // a hung API server
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	client := &http.Client{Transport: withRequestTimeout(200 * time.Millisecond)(http.DefaultTransport)}

	req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/api/v1/namespaces", nil)
	_, err := client.Do(req)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a request to a hung API server: %v, want it ended by the timeout", err)
	}

	req, _ = http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+"/api/v1/namespaces?watch=true", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || string(body) != `{"type":"ADDED"}` {
		t.Fatalf("the watch: %q, %v; want its event, past the timeout", body, err)
	}
}
