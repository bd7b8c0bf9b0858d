// Package doccheck holds no code: its tests check the repository's
// documentation against the code.
//
//   - TestDocsCiteExistingTests: every test name (Test...) that README.md or
//     a page of doc/ or doc/design/ cites is a test function of the root
//     module or of a nested module such as bench/.
//   - TestDesignPages: every page of doc/design/ is at most 250 lines,
//     opens with a title and its picture, has a "## Concepts" section (the
//     index aside), and is linked from the index, doc/design/README.md.
//   - TestExportedNamesDocumented: every exported name of the core module's
//     importable packages (a function, a method of an exported type, a
//     type, a constant, a variable, an exported struct field or interface
//     method) has a doc comment. Commands (package main, such as the
//     examples) are not checked: nothing in them can be imported.
package doccheck
