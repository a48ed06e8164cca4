// mncore-opt --verify-diagnostics fails (exit status 1) on each expected diagnostic
// that does not occur and each diagnostic that is not expected, with one message per
// failure at its position in the whole file; the inputs are in Inputs/.
// RUN: not mncore-opt %S/Inputs/verify_diagnostics_fail.mlir --split-input-file --verify-diagnostics 2>&1 >/dev/null | filecheck %s
// CHECK-NOT:   Traceback
// CHECK-NOT:   broadcast
// CHECK:       {{\A}}mncore-opt: {{.*}}verify_diagnostics_fail.mlir:13:6: error: expected error "never said" was not produced
// CHECK-NEXT:  {{^}}  // expected-error@+1 {{[{][{]}}never said{{[}][}]}}
// CHECK-NEXT:  {{^}}     ^^^^^
// CHECK-NEXT:  {{^}}mncore-opt: {{.*}}verify_diagnostics_fail.mlir:22:3: error: unexpected error: graph.exp expects a floating-point tensor
// CHECK-NEXT:  {{^}}  %0 = graph.exp %a : tensor<2xi64>
// CHECK-NEXT:  {{^}}  ^^{{$}}
// CHECK-NEXT:  {{^}}mncore-opt: {{.*}}verify_diagnostics_fail.mlir:31:3: error: unexpected error: graph.div expects floating-point operands
// CHECK:       {{^}}mncore-opt: {{.*}}verify_diagnostics_fail.mlir:30:6: error: expected error "graph.div expects floating-point operands" was not produced
// CHECK:       {{^}}mncore-opt: {{.*}}verify_diagnostics_fail.mlir:40:3: error: unexpected error: graph.not expects a tensor of i1
// CHECK:       {{^}}mncore-opt: {{.*}}verify_diagnostics_fail.mlir:39:6: error: expected warning "graph.not expects a tensor of i1" was not produced
// CHECK:       {{^}}mncore-opt: {{.*}}verify_diagnostics_fail.mlir:51:4: error: expected error "graph.convert must keep the shape" was not produced
// CHECK:       {{^}}mncore-opt: {{.*}}verify_diagnostics_fail.mlir:54:3: error: unexpected error: graph.convert must keep the shape
// CHECK-NOT:   mncore-opt:

// The chunks without an error are still printed, the others are not; a failed check
// leaves -o as it was.
// RUN: echo "user data" > %t.out
// RUN: not mncore-opt %S/Inputs/verify_diagnostics_fail.mlir --split-input-file --verify-diagnostics -o %t.out
// RUN: filecheck %s --check-prefix=KEPT --input-file %t.out
// KEPT: {{\A}}user data
// RUN: not mncore-opt %S/Inputs/verify_diagnostics_fail.mlir --split-input-file --verify-diagnostics 2>/dev/null | filecheck %s --check-prefix=PRINTED
// PRINTED-NOT: @{{matched|unexpected|wrong_line|wrong_severity|other_chunk}}
// PRINTED:     func.func @missing
// PRINTED-NOT: @{{matched|unexpected|wrong_line|wrong_severity|other_chunk}}
// PRINTED:     func.func @valid
// PRINTED-NOT: @{{matched|unexpected|wrong_line|wrong_severity|other_chunk}}

// A malformed directive is an error at its position.
// RUN: not mncore-opt %S/Inputs/verify_diagnostics_malformed.mlir --verify-diagnostics 2>&1 | filecheck %s --check-prefix=MALFORMED
// MALFORMED-NOT: Traceback
// MALFORMED:     {{\A}}mncore-opt: {{.*}}verify_diagnostics_malformed.mlir:3:6: error: malformed directive: expected 'expected-<error|warning|note|remark>[-re][@+N|@-N|@above|@below|@unknown] {{[{][{]}}text{{[}][}]}}'
// MALFORMED-NOT: mncore-opt:

// Without --verify-diagnostics the same input is an ordinary error, and the directives
// are comments.
// RUN: not mncore-opt %S/Inputs/verify_diagnostics_fail.mlir 2>&1 | filecheck %s --check-prefix=PLAIN
// PLAIN: {{\A}}mncore-opt: {{.*}}verify_diagnostics_fail.mlir:5:3: error: graph.add: shapes (2,), (3,) do not broadcast
