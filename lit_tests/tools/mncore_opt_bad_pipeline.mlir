// A pass pipeline that does not parse is one message, not a traceback (xDSL's
// ArgSpecParseError derives from BaseException, not Exception).
// RUN: not mncore-opt %s -p 'cse{' 2>&1 | filecheck %s
// RUN: not mncore-opt %s -p ',' 2>&1 | filecheck %s
// CHECK-NOT: Traceback
// CHECK:     {{\A}}mncore-opt: error:
// CHECK-NOT: Traceback

func.func @f(%x: tensor<2xf32>) -> tensor<2xf32> {
  func.return %x : tensor<2xf32>
}
