// `-` reads standard input, and a constant that xDSL prints as a hex bit pattern
// (16777216.0 needs 8 digits) keeps its value through mncore-opt | mncore-run -.
// RUN: mncore-opt %s | filecheck %s --check-prefix=IR
// RUN: mncore-opt %s | mncore-run - --args 'dense<[3.0e7, 1.0]> : tensor<2xf32>' | filecheck %s
// RUN: mncore-run %s --args 'dense<[3.0e7, 1.0]> : tensor<2xf32>' | filecheck %s

// IR:  graph.constant dense<0x4B800000> : tensor<f32>
// CHECK: result0 = tensor<2xf32>: [1.677722e+07, 1.000000e+00]
func.func @main(%a: tensor<2xf32>) -> tensor<2xf32> {
  %c = graph.constant dense<16777216.0> : tensor<f32>
  %0 = graph.minimum %a, %c : tensor<2xf32>, tensor<f32> -> tensor<2xf32>
  func.return %0 : tensor<2xf32>
}
