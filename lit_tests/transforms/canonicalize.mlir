// Graph canonicalization patterns: identities that keep the result type fold away;
// a broadcasting identity (x + 0 with a bigger 0) must stay.
// RUN: mncore-opt %s -p canonicalize --split-input-file | filecheck %s

// CHECK-LABEL: func.func @arith_identities
// CHECK-SAME:    (%a: tensor<4x3xf32>, %b: tensor<3xf32>)
// CHECK-NEXT:    %0 = graph.add %a, %b : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
// CHECK-NEXT:    func.return %0, %a : tensor<4x3xf32>, tensor<4x3xf32>
func.func @arith_identities(%a: tensor<4x3xf32>, %b: tensor<3xf32>) -> (tensor<4x3xf32>, tensor<4x3xf32>) {
  %z = graph.constant dense<0.0> : tensor<f32>
  %nz = graph.constant dense<-0.0> : tensor<f32>
  %o = graph.constant dense<1.0> : tensor<f32>
  %0 = graph.add %a, %nz : tensor<4x3xf32>, tensor<f32> -> tensor<4x3xf32>
  %1 = graph.mul %o, %0 : tensor<f32>, tensor<4x3xf32> -> tensor<4x3xf32>
  %2 = graph.sub %b, %z : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  %3 = graph.div %2, %o : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  %4 = graph.add %1, %3 : tensor<4x3xf32>, tensor<3xf32> -> tensor<4x3xf32>
  %5 = graph.add %nz, %a : tensor<f32>, tensor<4x3xf32> -> tensor<4x3xf32>
  func.return %4, %5 : tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// Signed zeros: (-0.0) + 0.0 is +0.0 and (-0.0) - (-0.0) is +0.0, so for floats
// x + 0.0, 0.0 + x and x - (-0.0) are not x. Integer zeros are.
// CHECK-LABEL: func.func @signed_zeros_stay
// CHECK-NEXT:    %z = graph.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %nz = graph.constant dense<-0.000000e+00> : tensor<f32>
// CHECK-NEXT:    %0 = graph.add %a, %z
// CHECK-NEXT:    %1 = graph.add %z, %a
// CHECK-NEXT:    %2 = graph.sub %a, %nz
// CHECK-NEXT:    func.return %0, %1, %2, %i
func.func @signed_zeros_stay(%a: tensor<3xf32>, %i: tensor<3xi64>) -> (tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi64>) {
  %z = graph.constant dense<0.0> : tensor<f32>
  %nz = graph.constant dense<-0.0> : tensor<f32>
  %iz = graph.constant dense<0> : tensor<i64>
  %0 = graph.add %a, %z : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  %1 = graph.add %z, %a : tensor<f32>, tensor<3xf32> -> tensor<3xf32>
  %2 = graph.sub %a, %nz : tensor<3xf32>, tensor<f32> -> tensor<3xf32>
  %3 = graph.add %i, %iz : tensor<3xi64>, tensor<i64> -> tensor<3xi64>
  func.return %0, %1, %2, %3 : tensor<3xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xi64>
}

// -----

// x + zeros(4x3) broadcasts x from 3 to 4x3: not an identity.
// CHECK-LABEL: func.func @broadcasting_zero_stays
// CHECK:         graph.add %b, %z
func.func @broadcasting_zero_stays(%b: tensor<3xf32>) -> tensor<4x3xf32> {
  %z = graph.constant dense<0.0> : tensor<4x3xf32>
  %0 = graph.add %b, %z : tensor<3xf32>, tensor<4x3xf32> -> tensor<4x3xf32>
  func.return %0 : tensor<4x3xf32>
}

// -----

// CHECK-LABEL: func.func @shapes
// CHECK-NEXT:    %0 = graph.reshape %a : tensor<4x3xf32> -> tensor<2x6xf32>
// CHECK-NEXT:    %1 = graph.permute %a perm = array<i64: 1, 0> : tensor<4x3xf32> -> tensor<3x4xf32>
// CHECK-NEXT:    func.return %a, %0, %a, %1, %a, %a : tensor<4x3xf32>, tensor<2x6xf32>, tensor<4x3xf32>, tensor<3x4xf32>, tensor<4x3xf32>, tensor<4x3xf32>
func.func @shapes(%a: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<2x6xf32>, tensor<4x3xf32>, tensor<3x4xf32>, tensor<4x3xf32>, tensor<4x3xf32>) {
  %0 = graph.reshape %a : tensor<4x3xf32> -> tensor<12xf32>
  %1 = graph.reshape %0 : tensor<12xf32> -> tensor<4x3xf32>
  %2 = graph.reshape %0 : tensor<12xf32> -> tensor<2x6xf32>
  %3 = graph.permute %a perm = array<i64: 1, 0> : tensor<4x3xf32> -> tensor<3x4xf32>
  %4 = graph.permute %3 perm = array<i64: 1, 0> : tensor<3x4xf32> -> tensor<4x3xf32>
  %5 = graph.permute %4 perm = array<i64: 1, 0> : tensor<4x3xf32> -> tensor<3x4xf32>
  %6 = graph.expand %a : tensor<4x3xf32> -> tensor<4x3xf32>
  %7 = graph.convert %a : tensor<4x3xf32> to tensor<4x3xf32>
  func.return %1, %2, %4, %5, %6, %7 : tensor<4x3xf32>, tensor<2x6xf32>, tensor<4x3xf32>, tensor<3x4xf32>, tensor<4x3xf32>, tensor<4x3xf32>
}

// -----

// Three permutes compose into one; two negations cancel; a single negation stays.
// CHECK-LABEL: func.func @compose
// CHECK-NEXT:    %0 = graph.permute %a perm = array<i64: 2, 0, 1> : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT:    %1 = graph.neg %0 : tensor<4x2x3xf32>
// CHECK-NEXT:    func.return %0, %1
func.func @compose(%a: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<4x2x3xf32>) {
  %0 = graph.permute %a perm = array<i64: 1, 0, 2> : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
  %1 = graph.permute %0 perm = array<i64: 0, 2, 1> : tensor<3x2x4xf32> -> tensor<3x4x2xf32>
  %2 = graph.permute %1 perm = array<i64: 1, 2, 0> : tensor<3x4x2xf32> -> tensor<4x2x3xf32>
  %3 = graph.neg %2 : tensor<4x2x3xf32>
  %4 = graph.neg %3 : tensor<4x2x3xf32>
  %5 = graph.neg %4 : tensor<4x2x3xf32>
  func.return %4, %5 : tensor<4x2x3xf32>, tensor<4x2x3xf32>
}

// -----

// ATen's 4-d matmul: a bmm of views merging the batch dimensions. The batch dimensions
// stay; the permute under the right operand is then a matmul operand itself (which
// convert-graph-to-task reads in place). Reshapes that undo each other fold.
// CHECK-LABEL: func.func @batch_matmul
// CHECK-NEXT:    [[KT:%\w+]] = graph.permute %k perm = array<i64: 1, 2, 3, 0> : tensor<5x1x2x4xf32> -> tensor<1x2x4x5xf32>
// CHECK-NEXT:    [[Q4:%\w+]] = graph.reshape %q : tensor<2x3x4xf32> -> tensor<1x2x3x4xf32>
// CHECK-NEXT:    [[OUT:%\w+]] = graph.matmul [[Q4]], [[KT]] : tensor<1x2x3x4xf32>, tensor<1x2x4x5xf32> -> tensor<1x2x3x5xf32>
// CHECK-NEXT:    [[OTHER:%\w+]] = graph.matmul %q, %w : tensor<2x3x4xf32>, tensor<2x4x5xf32> -> tensor<2x3x5xf32>
// CHECK-NEXT:    func.return [[OUT]], [[OTHER]]
func.func @batch_matmul(%q: tensor<2x3x4xf32>, %k: tensor<5x1x2x4xf32>, %w: tensor<2x4x5xf32>) -> (tensor<1x2x3x5xf32>, tensor<2x3x5xf32>) {
  %kt = graph.permute %k perm = array<i64: 1, 2, 3, 0> : tensor<5x1x2x4xf32> -> tensor<1x2x4x5xf32>
  %kv = graph.reshape %kt : tensor<1x2x4x5xf32> -> tensor<2x4x5xf32>
  %bmm = graph.matmul %q, %kv : tensor<2x3x4xf32>, tensor<2x4x5xf32> -> tensor<2x3x5xf32>
  %out = graph.reshape %bmm : tensor<2x3x5xf32> -> tensor<1x2x3x5xf32>
  %flat = graph.reshape %w : tensor<2x4x5xf32> -> tensor<2x20xf32>
  %back = graph.reshape %flat : tensor<2x20xf32> -> tensor<2x4x5xf32>
  %other = graph.matmul %q, %back : tensor<2x3x4xf32>, tensor<2x4x5xf32> -> tensor<2x3x5xf32>
  func.return %out, %other : tensor<1x2x3x5xf32>, tensor<2x3x5xf32>
}
