package requests

import (
	"testing"
	"time"
)

// TestRelabelledRootsRemembered ends, in one window, requests whose labels
// took their route in different ways, and checks which roots the window
// remembers without LabelledRoots: a root routed after its labels took
// the name it started with (a route middleware, as chi's) is remembered,
// since the samples taken before the route came carry that name; one
// whose labels only ever carried its route is not.
func TestRelabelledRootsRemembered(t *testing.T) {
	tests := []struct {
		name string
		// startRoute is the route Begin is given; do is what happens
		// to the request between Begin under "GET" and its End.
		startRoute string
		do         func(r *Request)
		wantRoute  string
		known      bool
	}{
		{"routed as it began", "/users/{id}", func(r *Request) {}, "", false},
		{"routed after: the labels took the start name first", "", func(r *Request) {
			r.SetHTTPRoute("/users/{id}")
			r.Labelled()
		}, "/users/{id}", true},
		{"labelled again with one route", "", func(r *Request) {
			r.Labelled()
		}, "", false},
		{"renamed after its labels were set", "", func(r *Request) {
			r.SetName("GET /users/{id}")
		}, "GET /users/{id}", true},
		{"routed, relabelled, then renamed", "", func(r *Request) {
			r.SetHTTPRoute("/users/{id}")
			r.Labelled()
			r.SetName("GET /users/{id}")
		}, "/users/{id}", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := install(t, Config{})
			start := time.Now()
			r := Begin(ids(1), "GET", tt.startRoute, start)
			tt.do(r)
			r.End(start.Add(time.Millisecond))
			q := tr.Window(start.Add(time.Second))
			e, ok := q.Route(rootID(1))
			if e != tt.wantRoute || ok != tt.known {
				t.Errorf("Route = %q, %v; want %q, %v", e, ok, tt.wantRoute, tt.known)
			}
			if q.Dropped != 0 {
				t.Errorf("%d roots dropped", q.Dropped)
			}
		})
	}
}
