// Package arch holds tests of the module's shape rather than its
// behaviour: TestImportDirection checks every import between the module's
// packages against the table in docs/architecture.md. It has no code of
// its own and nothing imports it.
package arch
