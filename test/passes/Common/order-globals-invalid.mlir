// RUN: spec-opt %s --spec-order-globals --allow-unregistered-dialect -split-input-file -verify-diagnostics

// A constant global referenced other than by memref.get_global is refused:
// renaming it would break the reference.
memref.global "private" constant @__constant_1xi64 : memref<1xi64> = dense<7>
func.func @f() {
  // expected-error @below {{refers to the constant global @__constant_1xi64 other than by memref.get_global; cannot rename it}}
  "test.use"() {ref = @__constant_1xi64} : () -> ()
  return
}
