// Package version holds the release of the module, for the root package's
// Version and the exporters' User-Agent, which cannot import the root.
package version

// Version is the release of the module.
const Version = "0.1.0"
