// Verifier failures of the graph dialect, one chunk per failure (chunks are split on
// the dashed separator lines): every check in the ops' `infer` and `verify_` methods
// (dialects/graph.py) and a few IRDL constraints they rely on. mncore-opt reports each
// as a parse error at the op's first token: `file:line:col`, the source line, a caret
// and the message. A zero window stride, which crashes the verifier instead, is tested
// in invalid_window_stride.mlir (an expected failure until fixed).
// RUN: mncore-opt %s --parsing-diagnostics --split-input-file | filecheck %s

// A binary op whose stated result type is not the broadcast one.
func.func @add_wrong_result(%a: tensor<2x3xf32>) {
  %0 = graph.add %a, %a : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<3x2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.add %a, %a : tensor<2x3xf32>,
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.add: result type tensor<3x2xf32> does not match the inferred type tensor<2x3xf32>
  func.return
}

// -----

// Operand shapes that do not broadcast.
func.func @add_not_broadcastable(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  %0 = graph.add %a, %b : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.add %a, %b : tensor<2x3xf32>,
  // CHECK-NEXT: ^^
  // CHECK-NEXT: shapes (2, 3), (4,) do not broadcast
  func.return
}

// -----

// Binary operands of different element types.
func.func @mul_element_types(%a: tensor<2xf32>, %b: tensor<2xi64>) {
  %0 = graph.mul %a, %b : tensor<2xf32>, tensor<2xi64> -> tensor<2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.mul %a, %b : tensor<2xf32>,
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.mul operands have different element types f32 and i64
  func.return
}

// -----

// A comparison yields i1, not the operand type.
func.func @eq_result_not_i1(%a: tensor<2xf32>) {
  %0 = graph.eq %a, %a : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.eq %a, %a : tensor<2xf32>,
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.eq: result type tensor<2xf32> does not match the inferred type tensor<2xi1>
  func.return
}

// -----

// A unary op keeps its operand type (only the generic form can state another).
func.func @neg_result_type(%a: tensor<2xf32>) {
  %0 = "graph.neg"(%a) : (tensor<2xf32>) -> tensor<3xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = "graph.neg"(%a) : (tensor<2xf32>)
  // CHECK-NEXT: ^^
  // CHECK-NEXT: result 'result' at position 0 does not verify:
  // CHECK-NEXT: attribute tensor<2xf32> expected from variable 'T', but got tensor<3xf32>
  func.return
}

// -----

// Transcendental unary ops need floats.
func.func @exp_int(%a: tensor<2xi64>) {
  %0 = graph.exp %a : tensor<2xi64>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.exp %a : tensor<2xi64>
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.exp expects a floating-point tensor
  func.return
}

// -----

// True division needs floats.
func.func @div_int(%a: tensor<2xi32>) {
  %0 = graph.div %a, %a : tensor<2xi32>, tensor<2xi32> -> tensor<2xi32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.div %a, %a : tensor<2xi32>,
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.div expects floating-point operands
  func.return
}

// -----

// Logical not needs i1.
func.func @not_float(%a: tensor<2xf32>) {
  %0 = graph.not %a : tensor<2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.not %a : tensor<2xf32>
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.not expects a tensor of i1
  func.return
}

// -----

// Convert changes the element type only.
func.func @convert_shape(%a: tensor<2x3xf32>) {
  %0 = graph.convert %a : tensor<2x3xf32> to tensor<6xi64>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.convert %a : tensor<2x3xf32>
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.convert must keep the shape
  func.return
}

// -----

// The where condition must be i1.
func.func @where_cond_not_i1(%c: tensor<2xf32>, %a: tensor<2xf32>) {
  %0 = graph.where %c, %a, %a : tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.where %c, %a, %a : tensor<2xf32>,
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.where condition must be a tensor of i1
  func.return
}

// -----

// The where branches share an element type.
func.func @where_branches(%c: tensor<2xi1>, %a: tensor<2xf32>, %b: tensor<2xi64>) {
  %0 = graph.where %c, %a, %b : tensor<2xi1>, tensor<2xf32>, tensor<2xi64> -> tensor<2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.where %c, %a, %b : tensor<2xi1>,
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.where branches have different element types
  func.return
}

// -----

// gelu's approximate is "none" or "tanh".
func.func @gelu_approximate(%a: tensor<2xf32>) {
  %0 = graph.gelu %a approximate "fast" : tensor<2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.gelu %a approximate
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.gelu approximate must be "none" or "tanh"
  func.return
}

// -----

// gelu_backward's gradient and input share one type.
func.func @gelu_backward_types(%g: tensor<2xf32>, %a: tensor<3xf32>) {
  %0 = "graph.gelu_backward"(%g, %a) : (tensor<2xf32>, tensor<3xf32>) -> tensor<3xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = "graph.gelu_backward"(%g,
  // CHECK-NEXT: ^^
  // CHECK-NEXT: operand 'input' at position 1 does not verify:
  // CHECK-NEXT: attribute tensor<2xf32> expected from variable 'T', but got tensor<3xf32>
  func.return
}

// -----

// A constant's result type is the type of its value.
func.func @constant_type() {
  %0 = "graph.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = "graph.constant"() <{value
  // CHECK-NEXT: ^^
  // CHECK-NEXT: attribute tensor<3xf32> expected from variable 'T', but got tensor<2xf32>
  func.return
}

// -----

// A reduction names each dimension once (1 and -1 are the same here).
func.func @sum_repeated_dims(%a: tensor<2x3xf32>) {
  %0 = graph.sum %a dims = array<i64: 1, -1> : tensor<2x3xf32> -> tensor<2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.sum %a dims = array<i64:
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.sum has repeated dimensions
  func.return
}

// -----

// A reduction dimension out of range.
func.func @mean_dim_out_of_range(%a: tensor<2x3xf32>) {
  %0 = graph.mean %a dims = array<i64: 2> : tensor<2x3xf32> -> tensor<2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.mean %a dims = array<i64:
  // CHECK-NEXT: ^^
  // CHECK-NEXT: dimension 2 out of range for rank 2
  func.return
}

// -----

// keepdim keeps the reduced dimensions as size 1.
func.func @amax_keepdim_result(%a: tensor<2x3xf32>) {
  %0 = graph.amax %a dims = array<i64: 1> keepdim = true : tensor<2x3xf32> -> tensor<2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.amax %a dims = array<i64:
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.amax: result type tensor<2xf32> does not match the inferred type tensor<2x1xf32>
  func.return
}

// -----

// matmul contraction sizes differ.
func.func @matmul_shapes(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  %0 = graph.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32> -> tensor<2x5xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.matmul %a, %b : tensor<2x3xf32>,
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.matmul cannot multiply shapes (2, 3) and (4, 5)
  func.return
}

// -----

// matmul batch dimensions differ.
func.func @matmul_batch(%a: tensor<2x2x3xf32>, %b: tensor<3x3x5xf32>) {
  %0 = graph.matmul %a, %b : tensor<2x2x3xf32>, tensor<3x3x5xf32> -> tensor<2x2x5xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.matmul %a, %b : tensor<2x2x3xf32>,
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.matmul cannot multiply shapes (2, 2, 3) and (3, 3, 5)
  func.return
}

// -----

// matmul operands of different element types.
func.func @matmul_element_types(%a: tensor<2x3xf32>, %b: tensor<3x5xf64>) {
  %0 = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x5xf64> -> tensor<2x5xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.matmul %a, %b : tensor<2x3xf32>,
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.matmul operands have different element types
  func.return
}

// -----

// reshape keeps the element count.
func.func @reshape_count(%a: tensor<2x3xf32>) {
  %0 = graph.reshape %a : tensor<2x3xf32> -> tensor<4x2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.reshape %a : tensor<2x3xf32>
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.reshape cannot reshape (2, 3) to (4, 2)
  func.return
}

// -----

// reshape keeps the element type.
func.func @reshape_element_type(%a: tensor<2x3xf32>) {
  %0 = graph.reshape %a : tensor<2x3xf32> -> tensor<6xf64>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.reshape %a : tensor<2x3xf32>
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.reshape must keep the element type
  func.return
}

// -----

// expand only grows size-1 dimensions.
func.func @expand_not_broadcastable(%a: tensor<3x1xf32>) {
  %0 = graph.expand %a : tensor<3x1xf32> -> tensor<1x4xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.expand %a : tensor<3x1xf32>
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.expand cannot broadcast (3, 1) to (1, 4)
  func.return
}

// -----

// expand cannot drop dimensions.
func.func @expand_lower_rank(%a: tensor<2x3xf32>) {
  %0 = graph.expand %a : tensor<2x3xf32> -> tensor<3xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.expand %a : tensor<2x3xf32>
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.expand cannot broadcast (2, 3) to (3,)
  func.return
}

// -----

// expand to an incompatible shape.
func.func @expand_incompatible(%a: tensor<3xf32>) {
  %0 = graph.expand %a : tensor<3xf32> -> tensor<2x4xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.expand %a : tensor<3xf32>
  // CHECK-NEXT: ^^
  // CHECK-NEXT: shapes (3,), (2, 4) do not broadcast
  func.return
}

// -----

// expand keeps the element type.
func.func @expand_element_type(%a: tensor<3xf32>) {
  %0 = graph.expand %a : tensor<3xf32> -> tensor<2x3xi64>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.expand %a : tensor<3xf32>
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.expand must keep the element type
  func.return
}

// -----

// permute needs a permutation of all dimensions.
func.func @permute_not_a_permutation(%a: tensor<2x3xf32>) {
  %0 = graph.permute %a perm = array<i64: 0, 0> : tensor<2x3xf32> -> tensor<2x2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.permute %a perm = array<i64:
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.permute: [0, 0] is not a permutation of 2 dimensions
  func.return
}

// -----

// permute with too few dimensions.
func.func @permute_short(%a: tensor<2x3x4xf32>) {
  %0 = graph.permute %a perm = array<i64: 1, 0> : tensor<2x3x4xf32> -> tensor<3x2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.permute %a perm = array<i64:
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.permute: [1, 0] is not a permutation of 3 dimensions
  func.return
}

// -----

// A slice past the end of its dimension.
func.func @slice_out_of_bounds(%a: tensor<2x3xf32>) {
  %0 = graph.slice %a dim 1 [1 : 5] : tensor<2x3xf32> -> tensor<2x2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.slice %a dim 1 [1 :
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.slice [1:5:1] out of bounds for size 3
  func.return
}

// -----

// A slice with a zero step.
func.func @slice_zero_step(%a: tensor<2x3xf32>) {
  %0 = graph.slice %a dim 1 [0 : 2 : 0] : tensor<2x3xf32> -> tensor<2x2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.slice %a dim 1 [0 :
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.slice [0:2:0] out of bounds for size 3
  func.return
}

// -----

// A slice whose result size is not ceil((end - start) / step).
func.func @slice_result(%a: tensor<2x5xf32>) {
  %0 = graph.slice %a dim 1 [0 : 5 : 2] : tensor<2x5xf32> -> tensor<2x2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.slice %a dim 1 [0 :
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.slice: result type tensor<2x2xf32> does not match the inferred type tensor<2x3xf32>
  func.return
}

// -----

// concat inputs differ outside the concatenated dimension.
func.func @concat_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  %0 = graph.concat %a, %b dim 1 : tensor<2x3xf32>, tensor<3x3xf32> -> tensor<2x6xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.concat %a, %b dim 1
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.concat inputs differ outside the concat dimension
  func.return
}

// -----

// concat inputs of different element types.
func.func @concat_element_types(%a: tensor<2x3xf32>, %b: tensor<2x3xi64>) {
  %0 = graph.concat %a, %b dim 0 : tensor<2x3xf32>, tensor<2x3xi64> -> tensor<4x3xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.concat %a, %b dim 0
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.concat inputs differ outside the concat dimension
  func.return
}

// -----

// concat of nothing.
func.func @concat_no_inputs() {
  %0 = "graph.concat"() <{dim = 0 : i64}> : () -> tensor<2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = "graph.concat"() <{dim = 0
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.concat needs at least one input
  func.return
}

// -----

// embedding indices must be i64.
func.func @embedding_indices(%w: tensor<10x4xf32>, %i: tensor<3xi32>) {
  %0 = graph.embedding %w[%i] : tensor<10x4xf32>, tensor<3xi32> -> tensor<3x4xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.embedding %w[%i] : tensor<10x4xf32>,
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.embedding expects a 2-D weight and i64 indices
  func.return
}

// -----

// embedding weight must be 2-D.
func.func @embedding_weight(%w: tensor<10xf32>, %i: tensor<3xi64>) {
  %0 = graph.embedding %w[%i] : tensor<10xf32>, tensor<3xi64> -> tensor<3xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.embedding %w[%i] : tensor<10xf32>,
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.embedding expects a 2-D weight and i64 indices
  func.return
}

// -----

// index_put indices must be i64.
func.func @index_put_indices(%x: tensor<5x4xf32>, %i: tensor<2xi32>, %v: tensor<2x4xf32>) {
  %0 = graph.index_put %x[%i], %v : tensor<5x4xf32>, tensor<2xi32>, tensor<2x4xf32> -> tensor<5x4xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.index_put %x[%i], %v
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.index_put expects i64 indices and matching values
  func.return
}

// -----

// index_put values must broadcast to the indexed shape.
func.func @index_put_values(%x: tensor<5x4xf32>, %i: tensor<2xi64>, %v: tensor<3x2x4xf32>) {
  %0 = graph.index_put %x[%i], %v : tensor<5x4xf32>, tensor<2xi64>, tensor<3x2x4xf32> -> tensor<5x4xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.index_put %x[%i], %v
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.index_put values must broadcast to (2, 4)
  func.return
}

// -----

// gather indices have the input's rank.
func.func @gather_rank(%x: tensor<5x4xf32>, %i: tensor<5xi64>) {
  %0 = graph.gather %x[%i] dim 1 : tensor<5x4xf32>, tensor<5xi64> -> tensor<5xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.gather %x[%i] dim 1
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.gather expects i64 indices of the input's rank
  func.return
}

// -----

// gather dim out of range.
func.func @gather_dim(%x: tensor<5x4xf32>, %i: tensor<5x2xi64>) {
  %0 = graph.gather %x[%i] dim 2 : tensor<5x4xf32>, tensor<5x2xi64> -> tensor<5x2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.gather %x[%i] dim 2
  // CHECK-NEXT: ^^
  // CHECK-NEXT: dimension 2 out of range for rank 2
  func.return
}

// -----

// scatter writes a 0-d value.
func.func @scatter_value_not_scalar(%x: tensor<5x4xf32>, %i: tensor<5x2xi64>, %v: tensor<5x2xf32>) {
  %0 = graph.scatter %x[%i] dim 1, %v : tensor<5x4xf32>, tensor<5x2xi64>, tensor<5x2xf32> -> tensor<5x4xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.scatter %x[%i] dim 1,
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.scatter value must be a 0-d tensor of the input's type
  func.return
}

// -----

// scatter indices must be i64.
func.func @scatter_indices(%x: tensor<5x4xf32>, %i: tensor<5x2xi32>, %v: tensor<f32>) {
  %0 = graph.scatter %x[%i] dim 1, %v : tensor<5x4xf32>, tensor<5x2xi32>, tensor<f32> -> tensor<5x4xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.scatter %x[%i] dim 1,
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.scatter expects i64 indices of the input's rank
  func.return
}

// -----

// softmax needs floats.
func.func @softmax_int(%a: tensor<2x3xi64>) {
  %0 = graph.softmax %a dim 1 : tensor<2x3xi64>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.softmax %a dim 1 : tensor<2x3xi64>
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.softmax expects a floating-point tensor
  func.return
}

// -----

// log_softmax dim out of range.
func.func @log_softmax_dim(%a: tensor<2x3xf32>) {
  %0 = graph.log_softmax %a dim -3 : tensor<2x3xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.log_softmax %a dim -3
  // CHECK-NEXT: ^^
  // CHECK-NEXT: dimension -3 out of range for rank 2
  func.return
}

// -----

// softmax_backward dim out of range.
func.func @softmax_backward_dim(%g: tensor<2x3xf32>, %y: tensor<2x3xf32>) {
  %0 = graph.softmax_backward %g, %y dim 2 : tensor<2x3xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.softmax_backward %g,
  // CHECK-NEXT: ^^
  // CHECK-NEXT: dimension 2 out of range for rank 2
  func.return
}

// -----

// layer_norm weight and bias have the normalized shape.
func.func @layer_norm_weight(%x: tensor<2x3x4xf32>, %w: tensor<3xf32>) {
  %0, %1, %2 = graph.layer_norm %x, %w, %w dims 1 eps 1.0e-05 : tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0, %1, %2 = graph.layer_norm %x,
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.layer_norm weight and bias must have shape (4,)
  func.return
}

// -----

// layer_norm normalizes at least one dimension.
func.func @layer_norm_dims(%x: tensor<2x3x4xf32>, %w: tensor<4xf32>) {
  %0, %1, %2 = graph.layer_norm %x, %w, %w dims 0 eps 1.0e-05 : tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0, %1, %2 = graph.layer_norm %x,
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.layer_norm normalizes 1 to rank dimensions
  func.return
}

// -----

// layer_norm statistics keep the normalized dimensions as size 1.
func.func @layer_norm_stats(%x: tensor<2x3x4xf32>, %w: tensor<4xf32>) {
  %0, %1, %2 = graph.layer_norm %x, %w, %w dims 1 eps 1.0e-05 : tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>, tensor<2x3xf32>, tensor<2x3xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0, %1, %2 = graph.layer_norm %x,
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.layer_norm: result type tensor<2x3x4xf32>, tensor<2x3xf32>, tensor<2x3xf32> does not match the inferred type tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>
  func.return
}

// -----

// layer_norm eps is an f64 attribute (only the generic form can spell another type).
func.func @layer_norm_eps_f32(%x: tensor<2x3x4xf32>, %w: tensor<4xf32>) {
  %0, %1, %2 = "graph.layer_norm"(%x, %w, %w) <{normalized_dims = 1 : i64, eps = 1.0e-05 : f32}> : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0, %1, %2 = "graph.layer_norm"(%x,
  // CHECK-NEXT: ^^
  // CHECK-NEXT: f32 should be of base attribute f64
  func.return
}

// -----

// layer_norm_backward statistics of the wrong shape.
func.func @layer_norm_backward_stats(%x: tensor<2x3x4xf32>, %m: tensor<2x1x1xf32>, %w: tensor<4xf32>) {
  %0, %1, %2 = graph.layer_norm_backward %x, %x, %m, %m, %w dims 1 : tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<4xf32> -> tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0, %1, %2 = graph.layer_norm_backward
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.layer_norm_backward statistics must have type tensor<2x3x1xf32>
  func.return
}

// -----

// conv2d input channels are weight channels times groups.
func.func @conv2d_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>) {
  %0 = graph.conv2d %x, %w, %b stride array<i64: 1, 1> padding array<i64: 1, 1> dilation array<i64: 1, 1> : tensor<1x3x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32> -> tensor<1x6x8x8xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.conv2d %x, %w, %b stride
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.conv2d: input (1, 3, 8, 8), weight (6, 4, 3, 3) and bias (6,) do not fit (NCHW input, OIHW weight, 1 groups)
  func.return
}

// -----

// conv2d groups that do not divide the input channels.
func.func @conv2d_groups(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>) {
  %0 = graph.conv2d %x, %w, %b stride array<i64: 1, 1> padding array<i64: 1, 1> dilation array<i64: 1, 1> groups 2 : tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32> -> tensor<1x6x8x8xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.conv2d %x, %w, %b stride
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.conv2d: input (1, 4, 8, 8), weight (6, 4, 3, 3) and bias (6,) do not fit (NCHW input, OIHW weight, 2 groups)
  func.return
}

// -----

// conv2d bias has one entry per output channel.
func.func @conv2d_bias(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<4xf32>) {
  %0 = graph.conv2d %x, %w, %b stride array<i64: 1, 1> padding array<i64: 1, 1> dilation array<i64: 1, 1> : tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<4xf32> -> tensor<1x6x8x8xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.conv2d %x, %w, %b stride
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.conv2d: input (1, 4, 8, 8), weight (6, 4, 3, 3) and bias (4,) do not fit (NCHW input, OIHW weight, 1 groups)
  func.return
}

// -----

// Window properties have two entries.
func.func @conv2d_stride_entries(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>) {
  %0 = graph.conv2d %x, %w, %b stride array<i64: 1, 1, 1> padding array<i64: 1, 1> dilation array<i64: 1, 1> : tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32> -> tensor<1x6x8x8xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.conv2d %x, %w, %b stride
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.conv2d: stride must be two integers >= 1
  func.return
}

// -----

// conv2d output size without padding.
func.func @conv2d_result(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>) {
  %0 = graph.conv2d %x, %w, %b stride array<i64: 1, 1> padding array<i64: 0, 0> dilation array<i64: 1, 1> : tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32> -> tensor<1x6x8x8xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.conv2d %x, %w, %b stride
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.conv2d: result type tensor<1x6x8x8xf32> does not match the inferred type tensor<1x6x6x6xf32>
  func.return
}

// -----

// conv2d_backward gradient has the forward result type.
func.func @conv2d_backward_grad(%g: tensor<1x6x6x6xf32>, %x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) {
  %0, %1, %2 = graph.conv2d_backward %g, %x, %w stride array<i64: 1, 1> padding array<i64: 1, 1> dilation array<i64: 1, 1> : tensor<1x6x6x6xf32>, tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32> -> tensor<6xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0, %1, %2 = graph.conv2d_backward
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.conv2d_backward: gradient must have type tensor<1x6x8x8xf32>
  func.return
}

// -----

// max_pool2d needs an NCHW input.
func.func @max_pool2d_not_4d(%x: tensor<4x8x8xf32>) {
  %0, %1 = graph.max_pool2d %x kernel array<i64: 2, 2> stride array<i64: 2, 2> padding array<i64: 0, 0> dilation array<i64: 1, 1> : tensor<4x8x8xf32> -> tensor<4x4x4xf32>, tensor<4x4x4xi64>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0, %1 = graph.max_pool2d %x kernel
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.max_pool2d expects an NCHW input
  func.return
}

// -----

// max_pool2d kernel has two entries.
func.func @max_pool2d_kernel_entries(%x: tensor<1x4x8x8xf32>) {
  %0, %1 = graph.max_pool2d %x kernel array<i64: 2> stride array<i64: 2, 2> padding array<i64: 0, 0> dilation array<i64: 1, 1> : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0, %1 = graph.max_pool2d %x kernel
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.max_pool2d: kernel must be two integers >= 1
  func.return
}

// -----

// max_pool2d indices are i64.
func.func @max_pool2d_indices(%x: tensor<1x4x8x8xf32>) {
  %0, %1 = graph.max_pool2d %x kernel array<i64: 2, 2> stride array<i64: 2, 2> padding array<i64: 0, 0> dilation array<i64: 1, 1> : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>, tensor<1x4x4x4xi32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0, %1 = graph.max_pool2d %x kernel
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.max_pool2d: result type tensor<1x4x4x4xf32>, tensor<1x4x4x4xi32> does not match the inferred type tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>
  func.return
}

// -----

// max_pool2d_backward indices match the gradient and are i64.
func.func @max_pool2d_backward_indices(%g: tensor<1x4x4x4xf32>, %x: tensor<1x4x8x8xf32>, %i: tensor<1x4x4x4xi32>) {
  %0 = graph.max_pool2d_backward %g, %x, %i : tensor<1x4x4x4xf32>, tensor<1x4x4x4xi32>, tensor<1x4x8x8xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.max_pool2d_backward
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.max_pool2d_backward indices must match the gradient
  func.return
}

// -----

// graph.fused block arguments have the operand types.
func.func @fused_block_args(%a: tensor<2xf32>) {
  %0 = graph.fused %a : (tensor<2xf32>) -> (tensor<2xf32>) {
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.fused %a : (tensor<2xf32>)
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.fused block arguments must match its operands
  ^bb0(%x: tensor<3xf32>):
    %y = graph.neg %x : tensor<3xf32>
    graph.yield %y : tensor<3xf32>
  }
  func.return
}

// -----

// graph.fused body ends with graph.yield.
func.func @fused_no_yield(%a: tensor<2xf32>) {
  %0 = graph.fused %a : (tensor<2xf32>) -> (tensor<2xf32>) {
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.fused %a : (tensor<2xf32>)
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.fused body must end with graph.yield
  ^bb0(%x: tensor<2xf32>):
    %y = graph.neg %x : tensor<2xf32>
  }
  func.return
}

// -----

// graph.fused yields its result types.
func.func @fused_yield_types(%a: tensor<2xf32>) {
  %0 = graph.fused %a : (tensor<2xf32>) -> (tensor<2xf32>) {
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.fused %a : (tensor<2xf32>)
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.fused yields types other than its results
  ^bb0(%x: tensor<2xf32>):
    %y = graph.lt %x, %x : tensor<2xf32>, tensor<2xf32> -> tensor<2xi1>
    graph.yield %y : tensor<2xi1>
  }
  func.return
}

// -----

// graph.fused holds only elementwise ops (and constants).
func.func @fused_not_elementwise(%a: tensor<2x3xf32>) {
  %0 = graph.fused %a : (tensor<2x3xf32>) -> (tensor<2xf32>) {
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = graph.fused %a : (tensor<2x3xf32>)
  // CHECK-NEXT: ^^
  // CHECK-NEXT: graph.fused body may hold only elementwise ops, not graph.sum
  ^bb0(%x: tensor<2x3xf32>):
    %y = graph.sum %x dims = array<i64: 1> : tensor<2x3xf32> -> tensor<2xf32>
    graph.yield %y : tensor<2xf32>
  }
  func.return
}

// -----

// An invalid op inside a graph.fused body is reported at that op.
func.func @fused_nested_error(%a: tensor<2xi64>) {
  %0 = graph.fused %a : (tensor<2xi64>) -> (tensor<2xi64>) {
  ^bb0(%x: tensor<2xi64>):
    %y = graph.exp %x : tensor<2xi64>
    // CHECK:      invalid.mlir:[[# @LINE - 1]]:5
    // CHECK-NEXT: %y = graph.exp %x : tensor<2xi64>
    // CHECK-NEXT: ^^
    // CHECK-NEXT: graph.exp expects a floating-point tensor
    graph.yield %y : tensor<2xi64>
  }
  func.return
}

// -----

// graph.yield is a terminator.
func.func @yield_not_last(%a: tensor<2xf32>) {
  %0 = graph.fused %a : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%x: tensor<2xf32>):
    graph.yield %x : tensor<2xf32>
    // CHECK:      invalid.mlir:[[# @LINE - 1]]:5
    // CHECK-NEXT: graph.yield %x : tensor<2xf32>
    // CHECK-NEXT: ^^^^^^^^^^^
    // CHECK-NEXT: 'graph.yield' must be the last operation in its parent block
    %y = graph.neg %x : tensor<2xf32>
    graph.yield %y : tensor<2xf32>
  }
  func.return
}

// -----

// A required property is missing (generic form).
func.func @missing_property(%a: tensor<2x3xf32>) {
  %0 = "graph.sum"(%a) : (tensor<2x3xf32>) -> tensor<2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK-NEXT: %0 = "graph.sum"(%a) : (tensor<2x3xf32>)
  // CHECK-NEXT: ^^
  // CHECK-NEXT: property 'dims' expected in operation 'graph.sum'
  func.return
}

// -----

// gelu_backward checks approximate like gelu.
func.func @gelu_backward_approximate(%x: tensor<2xf32>) {
  %0 = graph.gelu_backward %x, %x approximate "bogus" : tensor<2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK:      graph.gelu_backward approximate must be "none" or "tanh"
  func.return
}

// -----

// graph.yield belongs in graph.fused.
func.func @yield_outside_fused(%x: tensor<2xf32>) -> tensor<2xf32> {
  graph.yield %x : tensor<2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK:      'graph.yield' expects parent op 'graph.fused'
}

// -----

// Array properties hold i64.
func.func @float_dims(%x: tensor<2x3xf32>) {
  %0 = graph.sum %x dims = array<f32: 1.0> : tensor<2x3xf32> -> tensor<2xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK:      i64
  func.return
}

// -----

// layer_norm_backward normalizes 1 to rank dimensions.
func.func @layer_norm_backward_dims(%x: tensor<2x3xf32>, %w: tensor<2x3xf32>) {
  %0, %1, %2 = graph.layer_norm_backward %x, %x, %x, %x, %w dims 0 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK:      graph.layer_norm_backward: graph.layer_norm normalizes 1 to rank dimensions
  func.return
}

// -----

// softmax_backward needs floats.
func.func @softmax_backward_int(%x: tensor<2x3xi64>) {
  %0 = graph.softmax_backward %x, %x dim 1 : tensor<2x3xi64>
  // CHECK:      invalid.mlir:[[# @LINE - 1]]:3
  // CHECK:      graph.softmax_backward expects a floating-point tensor
  func.return
}
