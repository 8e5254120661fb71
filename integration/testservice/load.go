package testservice

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// LoadResult is what Load sent.
type LoadResult struct {
	// Sent counts, per route, the requests answered 200 OK.
	Sent map[string]int
	// Failed counts the requests that were not, by route; Errors holds
	// the first few of their errors.
	Failed map[string]int
	Errors []string
}

// Load sends requests to the service at base (http://host:port) for
// duration, each route at its rate (requests a second), open loop: a
// request is sent on schedule whether or not the ones before it were
// answered, so that a slow request does not slow the load. It returns once
// every request it sent has been answered.
func Load(ctx context.Context, base string, rates map[string]float64, duration time.Duration) LoadResult {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	defer client.CloseIdleConnections()
	res := LoadResult{Sent: make(map[string]int), Failed: make(map[string]int)}
	var (
		mu       sync.Mutex
		inflight sync.WaitGroup
		routes   sync.WaitGroup
	)
	send := func(route string) {
		defer inflight.Done()
		err := get(ctx, client, base+route)
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			res.Failed[route]++
			if len(res.Errors) < 5 {
				res.Errors = append(res.Errors, route+": "+err.Error())
			}
			return
		}
		res.Sent[route]++
	}
	end := time.Now().Add(duration)
	for route, rate := range rates {
		routes.Add(1)
		go func() {
			defer routes.Done()
			interval := time.Duration(float64(time.Second) / rate)
			for next := time.Now(); next.Before(end); next = next.Add(interval) {
				time.Sleep(time.Until(next))
				if ctx.Err() != nil {
					return
				}
				inflight.Add(1)
				go send(route)
			}
		}()
	}
	routes.Wait()
	inflight.Wait()
	return res
}

func get(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s", resp.Status)
	}
	return nil
}
