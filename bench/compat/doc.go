// Package compat shows, in tests, how github.com/ttlkit/ttlkit/collection
// relates to go-zero v1.10.3's core/collection, which it replaces by a
// change of import path. It has no API; everything is in its tests:
//
//   - api_test.go checks that every name go-zero's core/collection exports
//     exists in ours with exactly go-zero's signature (reflect, through one
//     instantiation of each generic), with the same type parameters and
//     constraints (go/ast), and lists what we add.
//   - same_*_test.go (TestSame_...) run the same scripted scenarios on
//     go-zero's types and ours, with go-zero's own timex fake ticker where a
//     ticker is involved, and require identical results wherever go-zero is
//     correct; a reference model says what correct is.
//   - diff_*_test.go (TestDiff_...) pin the deliberate differences: each
//     shows go-zero's behaviour and ours side by side, deterministically.
//     Where go-zero's side would need a real clock under load or a race it
//     does not let a test force, only ours can be shown; those tests live
//     with the packages (collection, cache), and doc/compat.md names them.
//
// doc/compat.md is the table of these differences, with the test that pins
// each. Timing runs inside testing/synctest bubbles: no test sleeps in real
// time.
package compat
