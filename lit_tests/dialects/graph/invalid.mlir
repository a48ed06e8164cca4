// Verifier failures of the graph dialect, one chunk per failure (chunks are split on
// the dashed separator lines): every check in the ops' `infer` and `verify_` methods
// (dialects/graph.py) and a few IRDL constraints they rely on; window properties are in
// invalid_windows.mlir. Each error is expected, with its message, at the op's line (by
// a directive on the line above): mncore-opt --verify-diagnostics fails on an error
// that is not expected there and on an expected one that does not occur.
// RUN: mncore-opt %s --split-input-file --verify-diagnostics

// A binary op whose stated result type is not the broadcast one.
func.func @add_wrong_result(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.add: result type tensor<3x2xf32> does not match the inferred type tensor<2x3xf32>}}
  %0 = graph.add %a, %a : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<3x2xf32>
  func.return
}

// -----

// Operand shapes that do not broadcast.
func.func @add_not_broadcastable(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{shapes (2, 3), (4,) do not broadcast}}
  %0 = graph.add %a, %b : tensor<2x3xf32>, tensor<4xf32> -> tensor<2x3xf32>
  func.return
}

// -----

// Binary operands of different element types.
func.func @mul_element_types(%a: tensor<2xf32>, %b: tensor<2xi64>) {
  // expected-error@+1 {{graph.mul operands have different element types f32 and i64}}
  %0 = graph.mul %a, %b : tensor<2xf32>, tensor<2xi64> -> tensor<2xf32>
  func.return
}

// -----

// A comparison yields i1, not the operand type.
func.func @eq_result_not_i1(%a: tensor<2xf32>) {
  // expected-error@+1 {{graph.eq: result type tensor<2xf32> does not match the inferred type tensor<2xi1>}}
  %0 = graph.eq %a, %a : tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  func.return
}

// -----

// A unary op keeps its operand type (only the generic form can state another).
func.func @neg_result_type(%a: tensor<2xf32>) {
  // expected-error-re@+1 {{result 'result' at position 0 does not verify:{{.*\n.*}}attribute tensor<2xf32> expected from variable 'T', but got tensor<3xf32>}}
  %0 = "graph.neg"(%a) : (tensor<2xf32>) -> tensor<3xf32>
  func.return
}

// -----

// Transcendental unary ops need floats.
func.func @exp_int(%a: tensor<2xi64>) {
  // expected-error@+1 {{graph.exp expects a floating-point tensor}}
  %0 = graph.exp %a : tensor<2xi64>
  func.return
}

// -----

// So does atan2 (fmod takes integers too).
func.func @atan2_int(%a: tensor<2xi64>) {
  // expected-error@+1 {{graph.atan2 expects floating-point operands}}
  %0 = graph.atan2 %a, %a : tensor<2xi64>, tensor<2xi64> -> tensor<2xi64>
  func.return
}

// -----

// True division needs floats.
func.func @div_int(%a: tensor<2xi32>) {
  // expected-error@+1 {{graph.div expects floating-point operands}}
  %0 = graph.div %a, %a : tensor<2xi32>, tensor<2xi32> -> tensor<2xi32>
  func.return
}

// -----

// Logical not needs i1.
func.func @not_float(%a: tensor<2xf32>) {
  // expected-error@+1 {{graph.not expects a tensor of i1}}
  %0 = graph.not %a : tensor<2xf32>
  func.return
}

// -----

// Convert changes the element type only.
func.func @convert_shape(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.convert must keep the shape}}
  %0 = graph.convert %a : tensor<2x3xf32> to tensor<6xi64>
  func.return
}

// -----

// The where condition must be i1.
func.func @where_cond_not_i1(%c: tensor<2xf32>, %a: tensor<2xf32>) {
  // expected-error@+1 {{graph.where condition must be a tensor of i1}}
  %0 = graph.where %c, %a, %a : tensor<2xf32>, tensor<2xf32>, tensor<2xf32> -> tensor<2xf32>
  func.return
}

// -----

// The where branches share an element type.
func.func @where_branches(%c: tensor<2xi1>, %a: tensor<2xf32>, %b: tensor<2xi64>) {
  // expected-error@+1 {{graph.where branches have different element types}}
  %0 = graph.where %c, %a, %b : tensor<2xi1>, tensor<2xf32>, tensor<2xi64> -> tensor<2xf32>
  func.return
}

// -----

// gelu's approximate is "none" or "tanh".
func.func @gelu_approximate(%a: tensor<2xf32>) {
  // expected-error@+1 {{graph.gelu approximate must be "none" or "tanh"}}
  %0 = graph.gelu %a approximate "fast" : tensor<2xf32>
  func.return
}

// -----

// gelu_backward's gradient and input share one type.
func.func @gelu_backward_types(%g: tensor<2xf32>, %a: tensor<3xf32>) {
  // expected-error-re@+1 {{operand 'input' at position 1 does not verify:{{.*\n.*}}attribute tensor<2xf32> expected from variable 'T', but got tensor<3xf32>}}
  %0 = "graph.gelu_backward"(%g, %a) : (tensor<2xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}

// -----

// A constant's result type is the type of its value.
func.func @constant_type() {
  // expected-error@+1 {{attribute tensor<3xf32> expected from variable 'T', but got tensor<2xf32>}}
  %0 = "graph.constant"() <{value = dense<1.0> : tensor<2xf32>}> : () -> tensor<3xf32>
  func.return
}

// -----

// A reduction names each dimension once (1 and -1 are the same here).
func.func @sum_repeated_dims(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.sum has repeated dimensions}}
  %0 = graph.sum %a dims = array<i64: 1, -1> : tensor<2x3xf32> -> tensor<2xf32>
  func.return
}

// -----

// A reduction dimension out of range.
func.func @mean_dim_out_of_range(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{dimension 2 out of range for rank 2}}
  %0 = graph.mean %a dims = array<i64: 2> : tensor<2x3xf32> -> tensor<2xf32>
  func.return
}

// -----

// keepdim keeps the reduced dimensions as size 1.
func.func @amax_keepdim_result(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.amax: result type tensor<2xf32> does not match the inferred type tensor<2x1xf32>}}
  %0 = graph.amax %a dims = array<i64: 1> keepdim = true : tensor<2x3xf32> -> tensor<2xf32>
  func.return
}

// -----

// matmul contraction sizes differ.
func.func @matmul_shapes(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error@+1 {{graph.matmul cannot multiply shapes (2, 3) and (4, 5)}}
  %0 = graph.matmul %a, %b : tensor<2x3xf32>, tensor<4x5xf32> -> tensor<2x5xf32>
  func.return
}

// -----

// matmul batch dimensions differ.
func.func @matmul_batch(%a: tensor<2x2x3xf32>, %b: tensor<3x3x5xf32>) {
  // expected-error@+1 {{graph.matmul cannot multiply shapes (2, 2, 3) and (3, 3, 5)}}
  %0 = graph.matmul %a, %b : tensor<2x2x3xf32>, tensor<3x3x5xf32> -> tensor<2x2x5xf32>
  func.return
}

// -----

// matmul_permuted: the permuted right operand does not fit.
func.func @matmul_permuted_shapes(%a: tensor<2x3xf32>, %b: tensor<5x3xf32>) {
  // expected-error@+1 {{graph.matmul_permuted cannot multiply shapes (2, 3) and (5, 3)}}
  %0 = graph.matmul_permuted %a, %b rhs_perm = array<i64: 0, 1> : tensor<2x3xf32>, tensor<5x3xf32> -> tensor<2x5xf32>
  func.return
}

// -----

// matmul_permuted: rhs_perm is not a permutation of the operand's dimensions.
func.func @matmul_permuted_perm(%a: tensor<2x3xf32>, %b: tensor<5x3xf32>) {
  // expected-error@+1 {{graph.permute: [1, 1] is not a permutation of 2 dimensions}}
  %0 = graph.matmul_permuted %a, %b rhs_perm = array<i64: 1, 1> : tensor<2x3xf32>, tensor<5x3xf32> -> tensor<2x5xf32>
  func.return
}

// -----

// matmul operands of different element types.
func.func @matmul_element_types(%a: tensor<2x3xf32>, %b: tensor<3x5xf64>) {
  // expected-error@+1 {{graph.matmul operands have different element types}}
  %0 = graph.matmul %a, %b : tensor<2x3xf32>, tensor<3x5xf64> -> tensor<2x5xf32>
  func.return
}

// -----

// reshape keeps the element count.
func.func @reshape_count(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.reshape cannot reshape (2, 3) to (4, 2)}}
  %0 = graph.reshape %a : tensor<2x3xf32> -> tensor<4x2xf32>
  func.return
}

// -----

// reshape keeps the element type.
func.func @reshape_element_type(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.reshape must keep the element type}}
  %0 = graph.reshape %a : tensor<2x3xf32> -> tensor<6xf64>
  func.return
}

// -----

// expand only grows size-1 dimensions.
func.func @expand_not_broadcastable(%a: tensor<3x1xf32>) {
  // expected-error@+1 {{graph.expand cannot broadcast (3, 1) to (1, 4)}}
  %0 = graph.expand %a : tensor<3x1xf32> -> tensor<1x4xf32>
  func.return
}

// -----

// expand cannot drop dimensions.
func.func @expand_lower_rank(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.expand cannot broadcast (2, 3) to (3,)}}
  %0 = graph.expand %a : tensor<2x3xf32> -> tensor<3xf32>
  func.return
}

// -----

// expand to an incompatible shape.
func.func @expand_incompatible(%a: tensor<3xf32>) {
  // expected-error@+1 {{shapes (3,), (2, 4) do not broadcast}}
  %0 = graph.expand %a : tensor<3xf32> -> tensor<2x4xf32>
  func.return
}

// -----

// expand keeps the element type.
func.func @expand_element_type(%a: tensor<3xf32>) {
  // expected-error@+1 {{graph.expand must keep the element type}}
  %0 = graph.expand %a : tensor<3xf32> -> tensor<2x3xi64>
  func.return
}

// -----

// permute needs a permutation of all dimensions.
func.func @permute_not_a_permutation(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.permute: [0, 0] is not a permutation of 2 dimensions}}
  %0 = graph.permute %a perm = array<i64: 0, 0> : tensor<2x3xf32> -> tensor<2x2xf32>
  func.return
}

// -----

// permute with too few dimensions.
func.func @permute_short(%a: tensor<2x3x4xf32>) {
  // expected-error@+1 {{graph.permute: [1, 0] is not a permutation of 3 dimensions}}
  %0 = graph.permute %a perm = array<i64: 1, 0> : tensor<2x3x4xf32> -> tensor<3x2xf32>
  func.return
}

// -----

// A slice past the end of its dimension.
func.func @slice_out_of_bounds(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.slice [1:5:1] out of bounds for size 3}}
  %0 = graph.slice %a dim 1 [1 : 5] : tensor<2x3xf32> -> tensor<2x2xf32>
  func.return
}

// -----

// A slice with a zero step.
func.func @slice_zero_step(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.slice [0:2:0] out of bounds for size 3}}
  %0 = graph.slice %a dim 1 [0 : 2 : 0] : tensor<2x3xf32> -> tensor<2x2xf32>
  func.return
}

// -----

// A slice whose result size is not ceil((end - start) / step).
func.func @slice_result(%a: tensor<2x5xf32>) {
  // expected-error@+1 {{graph.slice: result type tensor<2x2xf32> does not match the inferred type tensor<2x3xf32>}}
  %0 = graph.slice %a dim 1 [0 : 5 : 2] : tensor<2x5xf32> -> tensor<2x2xf32>
  func.return
}

// -----

// concat inputs differ outside the concatenated dimension.
func.func @concat_mismatch(%a: tensor<2x3xf32>, %b: tensor<3x3xf32>) {
  // expected-error@+1 {{graph.concat inputs differ outside the concat dimension}}
  %0 = graph.concat %a, %b dim 1 : tensor<2x3xf32>, tensor<3x3xf32> -> tensor<2x6xf32>
  func.return
}

// -----

// concat inputs of different element types.
func.func @concat_element_types(%a: tensor<2x3xf32>, %b: tensor<2x3xi64>) {
  // expected-error@+1 {{graph.concat inputs differ outside the concat dimension}}
  %0 = graph.concat %a, %b dim 0 : tensor<2x3xf32>, tensor<2x3xi64> -> tensor<4x3xf32>
  func.return
}

// -----

// concat of nothing.
func.func @concat_no_inputs() {
  // expected-error@+1 {{graph.concat needs at least one input}}
  %0 = "graph.concat"() <{dim = 0 : i64}> : () -> tensor<2xf32>
  func.return
}

// -----

// embedding indices must be i64.
func.func @embedding_indices(%w: tensor<10x4xf32>, %i: tensor<3xi32>) {
  // expected-error@+1 {{graph.embedding expects a 2-D weight and i64 indices}}
  %0 = graph.embedding %w[%i] : tensor<10x4xf32>, tensor<3xi32> -> tensor<3x4xf32>
  func.return
}

// -----

// embedding weight must be 2-D.
func.func @embedding_weight(%w: tensor<10xf32>, %i: tensor<3xi64>) {
  // expected-error@+1 {{graph.embedding expects a 2-D weight and i64 indices}}
  %0 = graph.embedding %w[%i] : tensor<10xf32>, tensor<3xi64> -> tensor<3xf32>
  func.return
}

// -----

// index_put indices must be i64.
func.func @index_put_indices(%x: tensor<5x4xf32>, %i: tensor<2xi32>, %v: tensor<2x4xf32>) {
  // expected-error@+1 {{graph.index_put expects i64 indices and matching values}}
  %0 = graph.index_put %x[%i], %v : tensor<5x4xf32>, tensor<2xi32>, tensor<2x4xf32> -> tensor<5x4xf32>
  func.return
}

// -----

// index_put values must broadcast to the indexed shape.
func.func @index_put_values(%x: tensor<5x4xf32>, %i: tensor<2xi64>, %v: tensor<3x2x4xf32>) {
  // expected-error@+1 {{graph.index_put values must broadcast to (2, 4)}}
  %0 = graph.index_put %x[%i], %v : tensor<5x4xf32>, tensor<2xi64>, tensor<3x2x4xf32> -> tensor<5x4xf32>
  func.return
}

// -----

// gather indices have the input's rank.
func.func @gather_rank(%x: tensor<5x4xf32>, %i: tensor<5xi64>) {
  // expected-error@+1 {{graph.gather expects i64 indices of the input's rank}}
  %0 = graph.gather %x[%i] dim 1 : tensor<5x4xf32>, tensor<5xi64> -> tensor<5xf32>
  func.return
}

// -----

// gather dim out of range.
func.func @gather_dim(%x: tensor<5x4xf32>, %i: tensor<5x2xi64>) {
  // expected-error@+1 {{dimension 2 out of range for rank 2}}
  %0 = graph.gather %x[%i] dim 2 : tensor<5x4xf32>, tensor<5x2xi64> -> tensor<5x2xf32>
  func.return
}

// -----

// scatter writes a 0-d value.
func.func @scatter_value_not_scalar(%x: tensor<5x4xf32>, %i: tensor<5x2xi64>, %v: tensor<5x2xf32>) {
  // expected-error@+1 {{graph.scatter value must be a 0-d tensor of the input's type}}
  %0 = graph.scatter %x[%i] dim 1, %v : tensor<5x4xf32>, tensor<5x2xi64>, tensor<5x2xf32> -> tensor<5x4xf32>
  func.return
}

// -----

// scatter indices must be i64.
func.func @scatter_indices(%x: tensor<5x4xf32>, %i: tensor<5x2xi32>, %v: tensor<f32>) {
  // expected-error@+1 {{graph.scatter expects i64 indices of the input's rank}}
  %0 = graph.scatter %x[%i] dim 1, %v : tensor<5x4xf32>, tensor<5x2xi32>, tensor<f32> -> tensor<5x4xf32>
  func.return
}

// -----

// softmax needs floats.
func.func @softmax_int(%a: tensor<2x3xi64>) {
  // expected-error@+1 {{graph.softmax expects a floating-point tensor}}
  %0 = graph.softmax %a dim 1 : tensor<2x3xi64>
  func.return
}

// -----

// log_softmax dim out of range.
func.func @log_softmax_dim(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{dimension -3 out of range for rank 2}}
  %0 = graph.log_softmax %a dim -3 : tensor<2x3xf32>
  func.return
}

// -----

// softmax_backward dim out of range.
func.func @softmax_backward_dim(%g: tensor<2x3xf32>, %y: tensor<2x3xf32>) {
  // expected-error@+1 {{dimension 2 out of range for rank 2}}
  %0 = graph.softmax_backward %g, %y dim 2 : tensor<2x3xf32>
  func.return
}

// -----

// layer_norm weight and bias have the normalized shape.
func.func @layer_norm_weight(%x: tensor<2x3x4xf32>, %w: tensor<3xf32>) {
  // expected-error@+1 {{graph.layer_norm weight and bias must have shape (4,)}}
  %0, %1, %2 = graph.layer_norm %x, %w, %w dims 1 eps 1.0e-05 : tensor<2x3x4xf32>, tensor<3xf32>, tensor<3xf32> -> tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>
  func.return
}

// -----

// layer_norm normalizes at least one dimension.
func.func @layer_norm_dims(%x: tensor<2x3x4xf32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{graph.layer_norm normalizes 1 to rank dimensions}}
  %0, %1, %2 = graph.layer_norm %x, %w, %w dims 0 eps 1.0e-05 : tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>
  func.return
}

// -----

// layer_norm statistics keep the normalized dimensions as size 1.
func.func @layer_norm_stats(%x: tensor<2x3x4xf32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{graph.layer_norm: result type tensor<2x3x4xf32>, tensor<2x3xf32>, tensor<2x3xf32> does not match the inferred type tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>}}
  %0, %1, %2 = graph.layer_norm %x, %w, %w dims 1 eps 1.0e-05 : tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>, tensor<2x3xf32>, tensor<2x3xf32>
  func.return
}

// -----

// layer_norm eps is an f64 attribute (only the generic form can spell another type).
func.func @layer_norm_eps_f32(%x: tensor<2x3x4xf32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{f32 should be of base attribute f64}}
  %0, %1, %2 = "graph.layer_norm"(%x, %w, %w) <{normalized_dims = 1 : i64, eps = 1.0e-05 : f32}> : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
  func.return
}

// -----

// layer_norm_backward statistics of the wrong shape.
func.func @layer_norm_backward_stats(%x: tensor<2x3x4xf32>, %m: tensor<2x1x1xf32>, %w: tensor<4xf32>) {
  // expected-error@+1 {{graph.layer_norm_backward statistics must have type tensor<2x3x1xf32>}}
  %0, %1, %2 = graph.layer_norm_backward %x, %x, %m, %m, %w dims 1 : tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<4xf32> -> tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>
  func.return
}

// -----

// conv2d input channels are weight channels times groups.
func.func @conv2d_channels(%x: tensor<1x3x8x8xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>) {
  // expected-error@+1 {{graph.conv2d: input (1, 3, 8, 8), weight (6, 4, 3, 3) and bias (6,) do not fit (NCHW input, OIHW weight, 1 groups)}}
  %0 = graph.conv2d %x, %w, %b stride array<i64: 1, 1> padding array<i64: 1, 1> dilation array<i64: 1, 1> : tensor<1x3x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32> -> tensor<1x6x8x8xf32>
  func.return
}

// -----

// conv2d groups that do not divide the input channels.
func.func @conv2d_groups(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>) {
  // expected-error@+1 {{graph.conv2d: input (1, 4, 8, 8), weight (6, 4, 3, 3) and bias (6,) do not fit (NCHW input, OIHW weight, 2 groups)}}
  %0 = graph.conv2d %x, %w, %b stride array<i64: 1, 1> padding array<i64: 1, 1> dilation array<i64: 1, 1> groups 2 : tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32> -> tensor<1x6x8x8xf32>
  func.return
}

// -----

// conv2d bias has one entry per output channel.
func.func @conv2d_bias(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<4xf32>) {
  // expected-error@+1 {{graph.conv2d: input (1, 4, 8, 8), weight (6, 4, 3, 3) and bias (4,) do not fit (NCHW input, OIHW weight, 1 groups)}}
  %0 = graph.conv2d %x, %w, %b stride array<i64: 1, 1> padding array<i64: 1, 1> dilation array<i64: 1, 1> : tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<4xf32> -> tensor<1x6x8x8xf32>
  func.return
}

// -----

// Window properties have two entries.
func.func @conv2d_stride_entries(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>) {
  // expected-error@+1 {{graph.conv2d: stride must be two integers >= 1}}
  %0 = graph.conv2d %x, %w, %b stride array<i64: 1, 1, 1> padding array<i64: 1, 1> dilation array<i64: 1, 1> : tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32> -> tensor<1x6x8x8xf32>
  func.return
}

// -----

// conv2d output size without padding.
func.func @conv2d_result(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>) {
  // expected-error@+1 {{graph.conv2d: result type tensor<1x6x8x8xf32> does not match the inferred type tensor<1x6x6x6xf32>}}
  %0 = graph.conv2d %x, %w, %b stride array<i64: 1, 1> padding array<i64: 0, 0> dilation array<i64: 1, 1> : tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32> -> tensor<1x6x8x8xf32>
  func.return
}

// -----

// conv2d_backward gradient has the forward result type.
func.func @conv2d_backward_grad(%g: tensor<1x6x6x6xf32>, %x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>) {
  // expected-error@+1 {{graph.conv2d_backward: gradient must have type tensor<1x6x8x8xf32>}}
  %0, %1, %2 = graph.conv2d_backward %g, %x, %w stride array<i64: 1, 1> padding array<i64: 1, 1> dilation array<i64: 1, 1> : tensor<1x6x6x6xf32>, tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32> -> tensor<6xf32>
  func.return
}

// -----

// max_pool2d needs an NCHW input.
func.func @max_pool2d_not_4d(%x: tensor<4x8x8xf32>) {
  // expected-error@+1 {{graph.max_pool2d expects an NCHW input}}
  %0, %1 = graph.max_pool2d %x kernel array<i64: 2, 2> stride array<i64: 2, 2> padding array<i64: 0, 0> dilation array<i64: 1, 1> : tensor<4x8x8xf32> -> tensor<4x4x4xf32>, tensor<4x4x4xi64>
  func.return
}

// -----

// max_pool2d kernel has two entries.
func.func @max_pool2d_kernel_entries(%x: tensor<1x4x8x8xf32>) {
  // expected-error@+1 {{graph.max_pool2d: kernel must be two integers >= 1}}
  %0, %1 = graph.max_pool2d %x kernel array<i64: 2> stride array<i64: 2, 2> padding array<i64: 0, 0> dilation array<i64: 1, 1> : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>
  func.return
}

// -----

// max_pool2d indices are i64.
func.func @max_pool2d_indices(%x: tensor<1x4x8x8xf32>) {
  // expected-error@+1 {{graph.max_pool2d: result type tensor<1x4x4x4xf32>, tensor<1x4x4x4xi32> does not match the inferred type tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>}}
  %0, %1 = graph.max_pool2d %x kernel array<i64: 2, 2> stride array<i64: 2, 2> padding array<i64: 0, 0> dilation array<i64: 1, 1> : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>, tensor<1x4x4x4xi32>
  func.return
}

// -----

// max_pool2d_backward indices match the gradient and are i64.
func.func @max_pool2d_backward_indices(%g: tensor<1x4x4x4xf32>, %x: tensor<1x4x8x8xf32>, %i: tensor<1x4x4x4xi32>) {
  // expected-error@+1 {{graph.max_pool2d_backward indices must match the gradient}}
  %0 = graph.max_pool2d_backward %g, %x, %i : tensor<1x4x4x4xf32>, tensor<1x4x4x4xi32>, tensor<1x4x8x8xf32>
  func.return
}

// -----

// graph.fused block arguments have the operand types.
func.func @fused_block_args(%a: tensor<2xf32>) {
  // expected-error@+1 {{graph.fused block arguments must match its operands}}
  %0 = graph.fused %a : (tensor<2xf32>) -> (tensor<2xf32>) {
  ^bb0(%x: tensor<3xf32>):
    %y = graph.neg %x : tensor<3xf32>
    graph.yield %y : tensor<3xf32>
  }
  func.return
}

// -----

// graph.fused body ends with graph.yield.
func.func @fused_no_yield(%a: tensor<2xf32>) {
  // expected-error@+1 {{graph.fused body must end with graph.yield}}
  %0 = graph.fused %a : (tensor<2xf32>) -> (tensor<2xf32>) {
  ^bb0(%x: tensor<2xf32>):
    %y = graph.neg %x : tensor<2xf32>
  }
  func.return
}

// -----

// graph.fused yields its result types.
func.func @fused_yield_types(%a: tensor<2xf32>) {
  // expected-error@+1 {{graph.fused yields types other than its results}}
  %0 = graph.fused %a : (tensor<2xf32>) -> (tensor<2xf32>) {
  ^bb0(%x: tensor<2xf32>):
    %y = graph.lt %x, %x : tensor<2xf32>, tensor<2xf32> -> tensor<2xi1>
    graph.yield %y : tensor<2xi1>
  }
  func.return
}

// -----

// graph.fused holds only elementwise ops (and constants).
func.func @fused_not_elementwise(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.fused body may hold only elementwise ops, not graph.sum}}
  %0 = graph.fused %a : (tensor<2x3xf32>) -> (tensor<2xf32>) {
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
    // expected-error@+1 {{graph.exp expects a floating-point tensor}}
    %y = graph.exp %x : tensor<2xi64>
    graph.yield %y : tensor<2xi64>
  }
  func.return
}

// -----

// graph.yield is a terminator.
func.func @yield_not_last(%a: tensor<2xf32>) {
  %0 = graph.fused %a : (tensor<2xf32>) -> tensor<2xf32> {
  ^bb0(%x: tensor<2xf32>):
    // expected-error@+1 {{'graph.yield' must be the last operation in its parent block}}
    graph.yield %x : tensor<2xf32>
    %y = graph.neg %x : tensor<2xf32>
    graph.yield %y : tensor<2xf32>
  }
  func.return
}

// -----

// A required property is missing (generic form).
func.func @missing_property(%a: tensor<2x3xf32>) {
  // expected-error@+1 {{property 'dims' expected in operation 'graph.sum'}}
  %0 = "graph.sum"(%a) : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}

// -----

// gelu_backward checks approximate like gelu.
func.func @gelu_backward_approximate(%x: tensor<2xf32>) {
  // expected-error@+1 {{graph.gelu_backward approximate must be "none" or "tanh"}}
  %0 = graph.gelu_backward %x, %x approximate "bogus" : tensor<2xf32>
  func.return
}

// -----

// graph.yield belongs in graph.fused.
func.func @yield_outside_fused(%x: tensor<2xf32>) -> tensor<2xf32> {
  // expected-error@+1 {{'graph.yield' expects parent op 'graph.fused'}}
  graph.yield %x : tensor<2xf32>
}

// -----

// Array properties hold i64.
func.func @float_dims(%x: tensor<2x3xf32>) {
  // expected-error@+1 {{Expected attribute i64 but got f32}}
  %0 = graph.sum %x dims = array<f32: 1.0> : tensor<2x3xf32> -> tensor<2xf32>
  func.return
}

// -----

// layer_norm_backward normalizes 1 to rank dimensions.
func.func @layer_norm_backward_dims(%x: tensor<2x3xf32>, %w: tensor<2x3xf32>) {
  // expected-error@+1 {{graph.layer_norm_backward: graph.layer_norm normalizes 1 to rank dimensions}}
  %0, %1, %2 = graph.layer_norm_backward %x, %x, %x, %x, %w dims 0 : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
  func.return
}

// -----

// softmax_backward needs floats.
func.func @softmax_backward_int(%x: tensor<2x3xi64>) {
  // expected-error@+1 {{graph.softmax_backward expects a floating-point tensor}}
  %0 = graph.softmax_backward %x, %x dim 1 : tensor<2x3xi64>
  func.return
}

// -----

// Booleans have no negation (torch refuses `-` on a bool tensor).
func.func @neg_bool(%a: tensor<3xi1>) {
  // expected-error@+1 {{graph.neg: negation of a boolean tensor is not supported; use graph.not}}
  %0 = graph.neg %a : tensor<3xi1>
  func.return
}

// -----

// A reduction torch.distributed does not name.
func.func @all_reduce_unknown_reduction(%x: tensor<4xf32>) {
  // expected-error@+1 {{graph.all_reduce: unknown reduction 'mean'; reductions: sum, avg, max, min, product}}
  %0 = graph.all_reduce %x "mean" group "0" size 2 : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

// A group without ranks.
func.func @all_gather_empty_group(%x: tensor<4xf32>) {
  // expected-error@+1 {{graph.all_gather: a group has at least one rank, not 0}}
  %0 = graph.all_gather %x group "0" size 0 : tensor<4xf32> -> tensor<4xf32>
  func.return
}

// -----

// An all-gather's result holds every rank's rows.
func.func @all_gather_wrong_result(%x: tensor<4x2xf32>) {
  // expected-error@+1 {{graph.all_gather: result type tensor<4x2xf32> does not match the inferred type tensor<12x2xf32>}}
  %0 = graph.all_gather %x group "0" size 3 : tensor<4x2xf32> -> tensor<4x2xf32>
  func.return
}

// -----

// Rows that do not split evenly over the group.
func.func @reduce_scatter_uneven(%x: tensor<5x2xf32>) {
  // expected-error@+1 {{graph.reduce_scatter: dim 0 of tensor<5x2xf32> does not split into 2 equal parts}}
  %0 = graph.reduce_scatter %x "sum" group "0" size 2 : tensor<5x2xf32> -> tensor<2x2xf32>
  func.return
}
