package main

import (
	"context"
	"io"
	"net/http"
	"time"
)

// defaultKubeAPITimeout bounds one Kubernetes API request of the manager
// (--kube-api-timeout) that has no deadline of its own, watches excepted.
const defaultKubeAPITimeout = 30 * time.Second

// withRequestTimeout bounds every request without a deadline to d, until
// its body is closed. Watches (and watch-lists) are left alone: they are
// meant to stay open, and rest.Config.Timeout would cut them every d (it
// is the http.Client's timeout, applied to the whole body).
func withRequestTimeout(d time.Duration) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		return timeoutTripper{rt: rt, d: d}
	}
}

type timeoutTripper struct {
	rt http.RoundTripper
	d  time.Duration
}

func (t timeoutTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if _, ok := req.Context().Deadline(); ok || req.URL.Query().Get("watch") == "true" {
		return t.rt.RoundTrip(req)
	}
	ctx, cancel := context.WithTimeout(req.Context(), t.d)
	resp, err := t.rt.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}
