// Window properties of graph.conv2d / graph.max_pool2d: zero strides, negative padding,
// zero dilation and windows larger than the padded input are verifier errors with a
// position (not a crash in the shape rule), checked by mncore-opt --verify-diagnostics.
// RUN: mncore-opt %s --split-input-file --verify-diagnostics

func.func @conv2d_zero_stride(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>) {
  // expected-error@+1 {{graph.conv2d: stride must be two integers >= 1}}
  %0 = graph.conv2d %x, %w, %b stride array<i64: 0, 0> padding array<i64: 0, 0> dilation array<i64: 1, 1> : tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32> -> tensor<1x6x6x6xf32>
  func.return
}

// -----

func.func @max_pool2d_zero_stride(%x: tensor<1x4x8x8xf32>) {
  // expected-error@+1 {{graph.max_pool2d: stride must be two integers >= 1}}
  %0, %1 = graph.max_pool2d %x kernel array<i64: 2, 2> stride array<i64: 0, 0> padding array<i64: 0, 0> dilation array<i64: 1, 1> : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>
  func.return
}

// -----

func.func @negative_padding(%x: tensor<1x4x8x8xf32>) {
  // expected-error@+1 {{graph.max_pool2d: padding must be two integers >= 0}}
  %0, %1 = graph.max_pool2d %x kernel array<i64: 2, 2> stride array<i64: 2, 2> padding array<i64: -1, 0> dilation array<i64: 1, 1> : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>
  func.return
}

// -----

func.func @zero_dilation(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>) {
  // expected-error@+1 {{graph.conv2d: dilation must be two integers >= 1}}
  %0 = graph.conv2d %x, %w, %b stride array<i64: 1, 1> padding array<i64: 0, 0> dilation array<i64: 0, 1> : tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32> -> tensor<1x6x6x6xf32>
  func.return
}

// -----

func.func @window_too_big(%x: tensor<1x4x2x2xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>) {
  // expected-error@+1 {{graph.conv2d: the window does not fit the input (2x2, output 0x0)}}
  %0 = graph.conv2d %x, %w, %b stride array<i64: 1, 1> padding array<i64: 0, 0> dilation array<i64: 1, 1> : tensor<1x4x2x2xf32>, tensor<6x4x3x3xf32>, tensor<6xf32> -> tensor<1x6x1x1xf32>
  func.return
}

// -----

// max_pool2d_backward's window must give the gradient's grid (floor or ceil mode).
func.func @pool_backward_window_grid(%g: tensor<1x4x4x4xf32>, %x: tensor<1x4x8x8xf32>, %i: tensor<1x4x4x4xi64>) {
  // expected-error@+1 {{graph.max_pool2d_backward: a 7x7 window grid over the input does not give the gradient's 4x4}}
  %0 = graph.max_pool2d_backward %g, %x, %i window array<i64: 2, 2> stride array<i64: 1, 1> padding array<i64: 0, 0> dilation array<i64: 1, 1> : tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>, tensor<1x4x8x8xf32>
  func.return
}

// -----

// A window is all four properties or none (only the generic form can leave some out).
func.func @pool_backward_partial_window(%g: tensor<1x4x4x4xf32>, %x: tensor<1x4x8x8xf32>, %i: tensor<1x4x4x4xi64>) {
  // expected-error@+1 {{graph.max_pool2d_backward: a window needs kernel, stride, padding and dilation}}
  %0 = "graph.max_pool2d_backward"(%g, %x, %i) <{kernel = array<i64: 2, 2>}> : (tensor<1x4x4x4xf32>, tensor<1x4x8x8xf32>, tensor<1x4x4x4xi64>) -> tensor<1x4x8x8xf32>
  func.return
}

// -----

func.func @pool_backward_zero_stride(%g: tensor<1x4x4x4xf32>, %x: tensor<1x4x8x8xf32>, %i: tensor<1x4x4x4xi64>) {
  // expected-error@+1 {{graph.max_pool2d_backward: stride must be two integers >= 1}}
  %0 = graph.max_pool2d_backward %g, %x, %i window array<i64: 2, 2> stride array<i64: 0, 2> padding array<i64: 0, 0> dilation array<i64: 1, 1> : tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>, tensor<1x4x8x8xf32>
  func.return
}
