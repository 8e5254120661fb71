package pprofconv

import "github.com/pprofotel/profiler/internal/otlpattr"

// The OTLP attributes this package reads, as the profiler's encoder writes
// them; their owner is internal/otlpattr.
const (
	attrProfileName            = otlpattr.ProfileName
	attrSampleTypeOrder        = otlpattr.SampleTypeOrder
	attrDefaultSampleType      = otlpattr.DefaultSampleType
	attrLocationIsFolded       = otlpattr.LocationIsFolded
	attrBuildIDGNU             = otlpattr.BuildIDGNU
	attrMappingHasFunctions    = otlpattr.MappingHasFunctions
	attrMappingHasFilenames    = otlpattr.MappingHasFilenames
	attrMappingHasLineNumbers  = otlpattr.MappingHasLineNumbers
	attrMappingHasInlineFrames = otlpattr.MappingHasInlineFrames

	// attrServiceName is the resource attribute Filter.Service matches.
	attrServiceName = "service.name"
)
