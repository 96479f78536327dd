// Package repo holds the repository's own rules as tests: the house sizes and
// owners (one token gate, one source recipe, one atomic write), the
// documentation's pinned versions and links, the fuzz targets listed, the
// version stamp, the Krew manifest and the package map.
package repo
