// Package opterr holds sharedcache.ErrOptions, so that package embedded,
// which package sharedcache's tests import, can wrap it without importing
// sharedcache.
package opterr

import "errors"

// ErrOptions is sharedcache.ErrOptions.
var ErrOptions = errors.New("sharedcache: invalid options")
