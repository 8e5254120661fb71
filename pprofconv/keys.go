package pprofconv

import "github.com/pprofotel/profiler/internal/otlp"

// The OTLP attributes this package reads, as the profiler's builder writes
// them. They are named here once, so that where they are defined can change
// without touching the converter.
const (
	attrProfileName            = otlp.AttrProfileName
	attrSampleTypeOrder        = otlp.AttrSampleTypeOrder
	attrDefaultSampleType      = otlp.AttrDefaultSampleType
	attrLocationIsFolded       = otlp.AttrLocationIsFolded
	attrBuildIDGNU             = otlp.AttrBuildIDGNU
	attrMappingHasFunctions    = otlp.AttrMappingHasFunctions
	attrMappingHasFilenames    = otlp.AttrMappingHasFilenames
	attrMappingHasLineNumbers  = otlp.AttrMappingHasLineNumbers
	attrMappingHasInlineFrames = otlp.AttrMappingHasInlineFrames

	// attrServiceName is the resource attribute Filter.Service matches.
	attrServiceName = "service.name"
)
