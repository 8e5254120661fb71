// Package testcert makes a throwaway public key infrastructure for tests of
// TLS and mutual TLS: a certificate authority, a server certificate for the
// loopback addresses and a client certificate, all signed by the authority
// and written as PEM files into the test's temporary directory.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// PKI is a certificate authority with one server and one client
// certificate. The file fields name PEM files in a temporary directory of
// the test that made it.
type PKI struct {
	// CAFile holds the authority's certificate, as
	// OTEL_EXPORTER_OTLP_CERTIFICATE expects.
	CAFile string
	// ClientCertFile and ClientKeyFile hold the client's certificate and
	// PKCS #8 private key, as OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and
	// OTEL_EXPORTER_OTLP_CLIENT_KEY expect.
	ClientCertFile, ClientKeyFile string

	// Roots trusts the authority and nothing else.
	Roots *x509.CertPool
	// Server is valid for localhost, 127.0.0.1 and ::1.
	Server tls.Certificate
	// Client is the client's certificate and key; Client.Leaf is parsed.
	Client tls.Certificate
}

// New makes a PKI whose certificates are valid for an hour. It fails t on
// any error.
func New(t testing.TB) *PKI {
	t.Helper()
	dir := t.TempDir()
	notBefore := time.Now().Add(-time.Minute)
	notAfter := notBefore.Add(time.Hour)

	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "pprofotel test CA"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER := sign(t, caTmpl, caTmpl, caKey, caKey)
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatalf("testcert: parse CA: %v", err)
	}

	serverKey := newKey(t)
	serverDER := sign(t, &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}, ca, serverKey, caKey)

	clientKey := newKey(t)
	clientDER := sign(t, &x509.Certificate{
		SerialNumber: big.NewInt(3),
		Subject:      pkix.Name{CommonName: "pprofotel test client"},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, ca, clientKey, caKey)
	clientLeaf, err := x509.ParseCertificate(clientDER)
	if err != nil {
		t.Fatalf("testcert: parse client certificate: %v", err)
	}

	p := &PKI{
		CAFile:         filepath.Join(dir, "ca.pem"),
		ClientCertFile: filepath.Join(dir, "client.pem"),
		ClientKeyFile:  filepath.Join(dir, "client-key.pem"),
		Roots:          x509.NewCertPool(),
		Server:         tls.Certificate{Certificate: [][]byte{serverDER}, PrivateKey: serverKey},
		Client:         tls.Certificate{Certificate: [][]byte{clientDER}, PrivateKey: clientKey, Leaf: clientLeaf},
	}
	p.Roots.AddCert(ca)
	writePEM(t, p.CAFile, "CERTIFICATE", caDER)
	writePEM(t, p.ClientCertFile, "CERTIFICATE", clientDER)
	keyDER, err := x509.MarshalPKCS8PrivateKey(clientKey)
	if err != nil {
		t.Fatalf("testcert: marshal client key: %v", err)
	}
	writePEM(t, p.ClientKeyFile, "PRIVATE KEY", keyDER)
	return p
}

// ServerConfig returns the configuration of a TLS server presenting the
// server certificate. With requireClientCert the server refuses clients
// without a certificate signed by the authority.
func (p *PKI) ServerConfig(requireClientCert bool) *tls.Config {
	cfg := &tls.Config{
		Certificates: []tls.Certificate{p.Server},
		MinVersion:   tls.VersionTLS12,
	}
	if requireClientCert {
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		cfg.ClientCAs = p.Roots
	}
	return cfg
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("testcert: generate key: %v", err)
	}
	return k
}

func sign(t testing.TB, tmpl, parent *x509.Certificate, key, parentKey *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatalf("testcert: sign %q: %v", tmpl.Subject.CommonName, err)
	}
	return der
}

func writePEM(t testing.TB, path, blockType string, der []byte) {
	t.Helper()
	data := pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatalf("testcert: %v", err)
	}
}
