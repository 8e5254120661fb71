package envconfig

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// CheckHostPort accepts "host:port" with a non-empty host and a port in
// 1..65535. It is the one check of that form, for options, variables and
// the exporters' own configuration.
func CheckHostPort(hostport string) error {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return errors.New("endpoint must be host:port")
	}
	if host == "" {
		return errors.New("endpoint must name a host")
	}
	return checkPort(port)
}

func checkPort(port string) error {
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("endpoint port must be a number from 1 to 65535 (port %q)", port)
	}
	return nil
}

// ParseURL accepts an absolute http or https URL with a host.
func ParseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("endpoint URL scheme must be http or https (scheme %q)", u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, errors.New("endpoint URL must name a host (no host given)")
	}
	if p := u.Port(); p != "" {
		if err := checkPort(p); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// GRPCHostPort returns the host:port that gRPC dials for u, taking the
// scheme's port when u has none.
func GRPCHostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	port := "443"
	if u.Scheme == "http" {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// GRPCEndpoint resolves the value of a gRPC endpoint variable: a URL, whose
// scheme decides security (http plaintext, https TLS) and whose path is
// ignored, or a bare host:port, which is plaintext only when insecure says
// so. It returns the host:port to dial.
func GRPCEndpoint(v string, insecure func() bool) (hostport string, plaintext bool, err error) {
	if !strings.Contains(v, "://") {
		if err := CheckHostPort(v); err != nil {
			return "", false, err
		}
		return v, insecure(), nil
	}
	u, err := ParseURL(v)
	if err != nil {
		return "", false, err
	}
	return GRPCHostPort(u), u.Scheme == "http", nil
}
