// Package peers pins the third-party caches that ttlkit's cache benchmarks
// will compare against, so that their versions are recorded in bench/go.mod
// and build with our toolchain in CI before any benchmark uses them. It is
// imported by nothing; a blank import here runs no init code in any binary.
package peers

import (
	_ "github.com/Yiling-J/theine-go"
	_ "github.com/dgraph-io/ristretto/v2"
	_ "github.com/hashicorp/golang-lru/v2/expirable"
	_ "github.com/jellydator/ttlcache/v3"
	_ "github.com/maypok86/otter/v2"
	_ "github.com/zeromicro/go-zero/core/collection"
)
