// Package arch holds tests of the repository's shape rather than its
// behaviour: TestImportDirection checks every import between the module's
// packages against the table in docs/architecture.md, and TestGoFileLines
// keeps non-test Go files under 1,200 lines. It has no code of its own and
// nothing imports it.
package arch
