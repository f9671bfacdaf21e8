// Package helm holds the tests of Limit Lab's Helm chart (limitlab/):
// linted and rendered with Helm's own library, as `helm lint` and `helm
// template` do.
package helm
