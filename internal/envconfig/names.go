package envconfig

import (
	"fmt"
	"strings"
)

// Rename is a variable that was renamed.
type Rename struct {
	Old, New string
	// Read says that Old is still read, in New's place, when New is not
	// set; Until names the release that stops reading it. A rename whose
	// meaning changed with it (a duration become a percentage) is not
	// read.
	Read  bool
	Until string
}

// Renames lists the variables of the module that were renamed, so that
// the old names say what replaced them (Reader.CheckNames) and, where Read
// is set, are still read (Reader.Lookup).
var Renames = []Rename{
	{Old: "PPROFOTEL_PERIOD", New: "PPROFOTEL_WINDOW"},
	{Old: "PPROFOTEL_CPU_DURATION", New: "PPROFOTEL_CPU_DUTY_CYCLE"},
	{Old: "PPROFOTEL_EXPORTER", New: "OTEL_PROFILES_EXPORTER"},
	{Old: "PPROFOTEL_CPU_DUTY", New: "PPROFOTEL_CPU_DUTY_CYCLE", Read: true, Until: "0.2.0"},
	{Old: "PPROFOTEL_OFFCPU_DUTY", New: "PPROFOTEL_OFFCPU_DUTY_CYCLE", Read: true, Until: "0.2.0"},
	{Old: "PPROFOTEL_MUTEX_FRACTION", New: "PPROFOTEL_MUTEX_PROFILE_FRACTION", Read: true, Until: "0.2.0"},
	{Old: "PPROFOTEL_BLOCK_RATE", New: "PPROFOTEL_BLOCK_PROFILE_RATE", Read: true, Until: "0.2.0"},
	{Old: "PPROFOTEL_MAX_ENDPOINTS", New: "PPROFOTEL_MAX_ROUTES", Read: true, Until: "0.2.0"},
}

// oldName returns the old name read in name's place, if any.
func oldName(name string) (string, bool) {
	for _, rn := range Renames {
		if rn.New == name && rn.Read {
			return rn.Old, true
		}
	}
	return "", false
}

// CheckNames warns about every variable of environ ("NAME=value"
// entries, as os.Environ returns them) whose name starts with prefix, in
// any case, and is neither one of known nor one of quiet: an old name
// says what replaced it and whether it is still read; another names the
// closest of known when it is close enough to be a misspelling of it
// (Closest). quiet holds names that are read elsewhere (by tests and
// tools) and not suggested.
func (r *Reader) CheckNames(environ []string, prefix string, known, quiet []string) {
	isKnown := make(map[string]bool, len(known)+len(quiet))
	for _, k := range known {
		isKnown[k] = true
	}
	for _, k := range quiet {
		isKnown[k] = true
	}
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if isKnown[name] || !strings.HasPrefix(strings.ToUpper(name), prefix) {
			continue
		}
		if rn, ok := renamed(name); ok {
			r.Warn(renameWarning(rn, r.getenv))
			continue
		}
		if c, ok := Closest(name, prefix, known); ok {
			r.Warn(fmt.Errorf("%s is not a variable the profiler reads; ignored (did you mean %s?)", name, c))
			continue
		}
		r.Warn(fmt.Errorf("%s is not a variable the profiler reads; ignored "+
			"(`go doc github.com/pprofotel/profiler` lists them)", name))
	}
}

func renamed(name string) (Rename, bool) {
	for _, rn := range Renames {
		if rn.Old == name {
			return rn, true
		}
	}
	return Rename{}, false
}

func renameWarning(rn Rename, getenv func(string) string) error {
	switch {
	case !rn.Read:
		return fmt.Errorf("%s was renamed %s, which may mean another unit (see its documentation); ignored", rn.Old, rn.New)
	case strings.TrimSpace(getenv(rn.New)) != "":
		return fmt.Errorf("%s was renamed %s; ignored, since %s is set", rn.Old, rn.New, rn.New)
	}
	return fmt.Errorf("%s was renamed %s; read in its place until release %s, rename it", rn.Old, rn.New, rn.Until)
}

// Closest returns the name of known closest to name in edit distance,
// letters compared in upper case, when it is close enough to be taken
// for a misspelling: at most a third of the length of name after prefix
// away, two edits always allowed.
func Closest(name, prefix string, known []string) (string, bool) {
	best, bestD := "", -1
	up := strings.ToUpper(name)
	for _, k := range known {
		if d := editDistance(up, strings.ToUpper(k)); bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	if bestD < 0 || bestD > max(2, (len(name)-len(prefix))/3) {
		return "", false
	}
	return best, true
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
