// mncore-opt --time-passes accounts for the whole run, not only the passes: parsing,
// each pass, the verification after each pass (and after parsing), and printing.
// RUN: mncore-opt %s --device mncore --time-passes -o %t.mlir | filecheck %s
// CHECK:      {{^}}Parsing took {{[0-9.e-]+}} seconds
// CHECK-NEXT: {{^}}Verification after parsing took {{[0-9.e-]+}} seconds
// CHECK-NEXT: {{^}}Pass canonicalize took {{[0-9.e-]+}} seconds
// CHECK-NEXT: {{^}}Verification after canonicalize took {{[0-9.e-]+}} seconds
// CHECK:      {{^}}Pass convert-task-to-mncore took {{[0-9.e-]+}} seconds
// CHECK-NEXT: {{^}}Verification after convert-task-to-mncore took {{[0-9.e-]+}} seconds
// CHECK-NEXT: {{^}}Pass mncore-forward-stores took {{[0-9.e-]+}} seconds
// CHECK-NEXT: {{^}}Verification after mncore-forward-stores took {{[0-9.e-]+}} seconds
// CHECK-NEXT: {{^}}Pass mncore-schedule took {{[0-9.e-]+}} seconds
// CHECK-NEXT: {{^}}Verification after mncore-schedule took {{[0-9.e-]+}} seconds
// CHECK-NEXT: {{^}}Printing took {{[0-9.e-]+}} seconds
// CHECK-NOT:  took
// The program is written all the same:
// RUN: filecheck %s --check-prefix=PROGRAM < %t.mlir
// PROGRAM: mncore.program @main machine "tiny"

func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  %y = graph.exp %x : tensor<8xf32>
  func.return %y : tensor<8xf32>
}
