package main

import (
	"fmt"
	"time"
)

const tableHeader = "| policies | read | catch-up | passes | its CPU | its bytes read | heap after | RSS after | peak RSS | heap, RSS at the end | steady pass: wall | CPU | requests | bytes read | bytes written |\n" +
	"|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|"

// steady is the mean of the steady passes: wall, CPU, bytes, and requests
// per API (rounded).
func (r measureResult) steady() (pc passCost, n int) {
	pc.Requests = apiCounts{}
	for _, p := range r.Passes[min(r.SteadyFrom, len(r.Passes)):] {
		n++
		pc.Wall += p.Wall
		pc.CPU += p.CPU
		pc.BytesRead += p.BytesRead
		pc.BytesWritten += p.BytesWritten
		for k, v := range p.Requests {
			pc.Requests[k] += v
		}
	}
	if n == 0 {
		return pc, 0
	}
	pc.Wall /= time.Duration(n)
	pc.CPU /= time.Duration(n)
	pc.BytesRead /= int64(n)
	pc.BytesWritten /= int64(n)
	for k, v := range pc.Requests {
		pc.Requests[k] = (v + int64(n)/2) / int64(n)
	}
	return pc, n
}

func mb(b uint64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }

// row is one run as a Markdown table row.
func (r measureResult) row() string {
	read := "off"
	if r.Read {
		read = "on"
		if !r.CaughtUp {
			read = "on, NOT caught up"
		}
	}
	s, n := r.steady()
	steady := "| – | – | – | – | –"
	if n > 0 {
		steady = fmt.Sprintf("| %s | %s | %d (%s) | %.1f MB | %.2f MB", s.Wall.Round(time.Millisecond), s.CPU.Round(time.Millisecond),
			s.Requests.total(), s.Requests, float64(s.BytesRead)/1e6, float64(s.BytesWritten)/1e6)
	}
	var cpu time.Duration
	var bytesRead int64
	for _, p := range r.Passes[:min(r.SteadyFrom, len(r.Passes))] {
		cpu += p.CPU
		bytesRead += p.BytesRead
	}
	return fmt.Sprintf("| %d | %s | %s | %d | %s | %.0f MB | %s | %s | %s | %s, %s %s |", r.Follow, read, r.CatchUp.Round(100*time.Millisecond),
		r.CatchUpPasses, cpu.Round(100*time.Millisecond), float64(bytesRead)/1e6, mb(r.HeapInuse), mb(r.RSS), mb(r.PeakRSS), mb(r.SteadyHeap), mb(r.SteadyRSS), steady)
}
