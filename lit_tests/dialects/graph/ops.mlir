// Every op of the graph dialect in its custom syntax: printing, and parsing back both
// the custom and the generic form (which must give the same text). Optional properties
// are shown present and absent; a property set to its default value is not printed.
// RUN: mncore-opt %s | filecheck %s
// RUN: mncore-opt %s --print-op-generic | mncore-opt | filecheck %s
// RUN: mncore-opt %s --print-op-generic | filecheck %s --check-prefix=GENERIC

// Unary elementwise ops (float-only ones on f32, abs on i64, not on i1), convert, gelu
// with and without approximate, gelu_backward.
func.func @unary(%x: tensor<2x3xf32>, %i: tensor<4xi64>, %b: tensor<4xi1>) {
  %neg = graph.neg %x : tensor<2x3xf32>
  %abs = graph.abs %i : tensor<4xi64>
  %relu = graph.relu %neg : tensor<2x3xf32>
  %exp = graph.exp %x : tensor<2x3xf32>
  %log = graph.log %exp : tensor<2x3xf32>
  %log1p = graph.log1p %x : tensor<2x3xf32>
  %sqrt = graph.sqrt %x : tensor<2x3xf32>
  %rsqrt = graph.rsqrt %x : tensor<2x3xf32>
  %recip = graph.reciprocal %x : tensor<2x3xf32>
  %tanh = graph.tanh %x : tensor<2x3xf32>
  %sigmoid = graph.sigmoid %x : tensor<2x3xf32>
  %erf = graph.erf %x : tensor<2x3xf32>
  %floor = graph.floor %x : tensor<2x3xf32>
  %sin = graph.sin %x : tensor<2x3xf32>
  %cos = graph.cos %x : tensor<2x3xf32>
  %tan = graph.tan %x : tensor<2x3xf32>
  %asin = graph.asin %x : tensor<2x3xf32>
  %acos = graph.acos %x : tensor<2x3xf32>
  %atan = graph.atan %x : tensor<2x3xf32>
  %sinh = graph.sinh %x : tensor<2x3xf32>
  %cosh = graph.cosh %x : tensor<2x3xf32>
  %asinh = graph.asinh %x : tensor<2x3xf32>
  %acosh = graph.acosh %x : tensor<2x3xf32>
  %atanh = graph.atanh %x : tensor<2x3xf32>
  %expm1 = graph.expm1 %x : tensor<2x3xf32>
  %erfc = graph.erfc %x : tensor<2x3xf32>
  %erfcx = graph.erfcx %x : tensor<2x3xf32>
  %erfinv = graph.erfinv %x : tensor<2x3xf32>
  %lgamma = graph.lgamma %x : tensor<2x3xf32>
  %digamma = graph.digamma %x : tensor<2x3xf32>
  %not = graph.not %b : tensor<4xi1>
  %f64 = graph.convert %x : tensor<2x3xf32> to tensor<2x3xf64>
  %int = graph.convert %b : tensor<4xi1> to tensor<4xi64>
  %gelu = graph.gelu %x : tensor<2x3xf32>
  %gelu_tanh = graph.gelu %x approximate "tanh" : tensor<2x3xf32>
  %gelu_none = graph.gelu %x approximate "none" : tensor<2x3xf32>
  %dgelu = graph.gelu_backward %gelu, %x : tensor<2x3xf32>
  %dgelu_tanh = graph.gelu_backward %gelu, %x approximate "tanh" : tensor<2x3xf32>
  func.return
}

// CHECK-LABEL: func.func @unary(
// CHECK-SAME:  [[X:%\w+]]: tensor<2x3xf32>, [[I:%\w+]]: tensor<4xi64>, [[B:%\w+]]: tensor<4xi1>) {
// CHECK-NEXT:  [[NEG:%\w+]] = graph.neg [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[ABS:%\w+]] = graph.abs [[I]] : tensor<4xi64>
// CHECK-NEXT:  [[RELU:%\w+]] = graph.relu [[NEG]] : tensor<2x3xf32>
// CHECK-NEXT:  [[EXP:%\w+]] = graph.exp [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[LOG:%\w+]] = graph.log [[EXP]] : tensor<2x3xf32>
// CHECK-NEXT:  [[LOG1P:%\w+]] = graph.log1p [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[SQRT:%\w+]] = graph.sqrt [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[RSQRT:%\w+]] = graph.rsqrt [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[RECIP:%\w+]] = graph.reciprocal [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[TANH:%\w+]] = graph.tanh [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[SIGMOID:%\w+]] = graph.sigmoid [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[ERF:%\w+]] = graph.erf [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[FLOOR:%\w+]] = graph.floor [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[SIN:%\w+]] = graph.sin [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[COS:%\w+]] = graph.cos [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[TAN:%\w+]] = graph.tan [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[ASIN:%\w+]] = graph.asin [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[ACOS:%\w+]] = graph.acos [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[ATAN:%\w+]] = graph.atan [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[SINH:%\w+]] = graph.sinh [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[COSH:%\w+]] = graph.cosh [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[ASINH:%\w+]] = graph.asinh [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[ACOSH:%\w+]] = graph.acosh [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[ATANH:%\w+]] = graph.atanh [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[EXPM1:%\w+]] = graph.expm1 [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[ERFC:%\w+]] = graph.erfc [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[ERFCX:%\w+]] = graph.erfcx [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[ERFINV:%\w+]] = graph.erfinv [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[LGAMMA:%\w+]] = graph.lgamma [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[DIGAMMA:%\w+]] = graph.digamma [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[NOT:%\w+]] = graph.not [[B]] : tensor<4xi1>
// CHECK-NEXT:  [[F64:%\w+]] = graph.convert [[X]] : tensor<2x3xf32> to tensor<2x3xf64>
// CHECK-NEXT:  [[INT:%\w+]] = graph.convert [[B]] : tensor<4xi1> to tensor<4xi64>
// CHECK-NEXT:  [[GELU:%\w+]] = graph.gelu [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[GELU_TANH:%\w+]] = graph.gelu [[X]] approximate "tanh" : tensor<2x3xf32>
// CHECK-NEXT:  [[GELU_NONE:%\w+]] = graph.gelu [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[DGELU:%\w+]] = graph.gelu_backward [[GELU]], [[X]] : tensor<2x3xf32>
// CHECK-NEXT:  [[DGELU_TANH:%\w+]] = graph.gelu_backward [[GELU]], [[X]] approximate "tanh" : tensor<2x3xf32>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }

// Binary elementwise ops with broadcasting (rank-1 and 0-d operands, 2x1 with 1x3),
// comparisons yielding i1, and where.
func.func @binary(%x: tensor<2x3xf32>, %r: tensor<3xf32>, %s: tensor<f32>, %i: tensor<2x1xi64>, %j: tensor<1x3xi64>, %b: tensor<4xi1>, %c: tensor<2x3xi1>) {
  %add = graph.add %x, %r : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %sub = graph.sub %x, %s : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %mul = graph.mul %i, %j : tensor<2x1xi64>, tensor<1x3xi64> -> tensor<2x3xi64>
  %div = graph.div %x, %x : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %pow = graph.pow %x, %s : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %max = graph.maximum %x, %r : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %atan2 = graph.atan2 %x, %r : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
  %fmod = graph.fmod %x, %s : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %min = graph.minimum %r, %x : tensor<3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
  %and = graph.and %b, %b : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  %or = graph.or %b, %and : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
  %eq = graph.eq %x, %r : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
  %ne = graph.ne %i, %j : tensor<2x1xi64>, tensor<1x3xi64> -> tensor<2x3xi1>
  %lt = graph.lt %x, %s : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xi1>
  %le = graph.le %x, %add : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xi1>
  %gt = graph.gt %x, %add : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xi1>
  %ge = graph.ge %x, %add : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xi1>
  %where = graph.where %c, %x, %s : tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
  %where_b = graph.where %lt, %s, %r : tensor<2x3xi1>, tensor<f32>, tensor<3xf32> -> tensor<2x3xf32>
  func.return
}

// CHECK-LABEL: func.func @binary(
// CHECK-SAME:  [[X:%\w+]]: tensor<2x3xf32>, [[R:%\w+]]: tensor<3xf32>, [[S:%\w+]]: tensor<f32>, [[I:%\w+]]: tensor<2x1xi64>, [[J:%\w+]]: tensor<1x3xi64>, [[B:%\w+]]: tensor<4xi1>, [[C:%\w+]]: tensor<2x3xi1>) {
// CHECK-NEXT:  [[ADD:%\w+]] = graph.add [[X]], [[R]] : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:  [[SUB:%\w+]] = graph.sub [[X]], [[S]] : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
// CHECK-NEXT:  [[MUL:%\w+]] = graph.mul [[I]], [[J]] : tensor<2x1xi64>, tensor<1x3xi64> -> tensor<2x3xi64>
// CHECK-NEXT:  [[DIV:%\w+]] = graph.div [[X]], [[X]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:  [[POW:%\w+]] = graph.pow [[X]], [[S]] : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
// CHECK-NEXT:  [[MAX:%\w+]] = graph.maximum [[X]], [[R]] : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:  [[ATAN2:%\w+]] = graph.atan2 [[X]], [[R]] : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:  [[FMOD:%\w+]] = graph.fmod [[X]], [[S]] : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
// CHECK-NEXT:  [[MIN:%\w+]] = graph.minimum [[R]], [[X]] : tensor<3xf32>, tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:  [[AND:%\w+]] = graph.and [[B]], [[B]] : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
// CHECK-NEXT:  [[OR:%\w+]] = graph.or [[B]], [[AND]] : tensor<4xi1>, tensor<4xi1> -> tensor<4xi1>
// CHECK-NEXT:  [[EQ:%\w+]] = graph.eq [[X]], [[R]] : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xi1>
// CHECK-NEXT:  [[NE:%\w+]] = graph.ne [[I]], [[J]] : tensor<2x1xi64>, tensor<1x3xi64> -> tensor<2x3xi1>
// CHECK-NEXT:  [[LT:%\w+]] = graph.lt [[X]], [[S]] : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xi1>
// CHECK-NEXT:  [[LE:%\w+]] = graph.le [[X]], [[ADD]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xi1>
// CHECK-NEXT:  [[GT:%\w+]] = graph.gt [[X]], [[ADD]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xi1>
// CHECK-NEXT:  [[GE:%\w+]] = graph.ge [[X]], [[ADD]] : tensor<2x3xf32>, tensor<2x3xf32> -> tensor<2x3xi1>
// CHECK-NEXT:  [[WHERE:%\w+]] = graph.where [[C]], [[X]], [[S]] : tensor<2x3xi1>, tensor<2x3xf32>, tensor<f32> -> tensor<2x3xf32>
// CHECK-NEXT:  [[WHERE_B:%\w+]] = graph.where [[LT]], [[S]], [[R]] : tensor<2x3xi1>, tensor<f32>, tensor<3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }

// Constants: splat values print as one value, others in full; floats, integers, i1, 0-d.
func.func @constants() {
  %splat = graph.constant dense<1.5> : tensor<2x3xf32>
  %full = graph.constant dense<[[1.0, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %ints = graph.constant dense<[0, 2, -1]> : tensor<3xi64>
  %same = graph.constant dense<[4, 4]> : tensor<2xi32>
  %true = graph.constant dense<true> : tensor<4xi1>
  %bools = graph.constant dense<[true, false]> : tensor<2xi1>
  %scalar = graph.constant dense<7> : tensor<i32>
  %f64 = graph.constant dense<-0.25> : tensor<f64>
  func.return
}

// CHECK-LABEL: func.func @constants(
// CHECK-SAME:  ) {
// CHECK-NEXT:  [[SPLAT:%\w+]] = graph.constant dense<1.500000e+00> : tensor<2x3xf32>
// CHECK-NEXT:  [[FULL:%\w+]] = graph.constant dense<{{\[\[}}1.000000e+00, 2.000000e+00], [3.000000e+00, 4.000000e+00]]> : tensor<2x2xf32>
// CHECK-NEXT:  [[INTS:%\w+]] = graph.constant dense<[0, 2, -1]> : tensor<3xi64>
// CHECK-NEXT:  [[SAME:%\w+]] = graph.constant dense<4> : tensor<2xi32>
// CHECK-NEXT:  [[TRUE:%\w+]] = graph.constant dense<true> : tensor<4xi1>
// CHECK-NEXT:  [[BOOLS:%\w+]] = graph.constant dense<[true, false]> : tensor<2xi1>
// CHECK-NEXT:  [[SCALAR:%\w+]] = graph.constant dense<7> : tensor<i32>
// CHECK-NEXT:  [[F64:%\w+]] = graph.constant dense<-2.500000e-01> : tensor<f64>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }

// Reductions with keepdim absent, true and false (false is the default and is not
// printed), negative dims, a full reduction to 0-d; matmul, batched too.
func.func @reductions(%x: tensor<2x3x4xf32>, %a: tensor<2x3xf32>, %c: tensor<3x5xf32>, %ba: tensor<4x2x3xf32>, %bb: tensor<4x3x5xf32>) {
  %sum = graph.sum %x dims = array<i64: 1> : tensor<2x3x4xf32> -> tensor<2x4xf32>
  %sum_keep = graph.sum %x dims = array<i64: 0, 2> keepdim = true : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
  %mean = graph.mean %x dims = array<i64: -1> : tensor<2x3x4xf32> -> tensor<2x3xf32>
  %mean_nokeep = graph.mean %x dims = array<i64: -1> keepdim = false : tensor<2x3x4xf32> -> tensor<2x3xf32>
  %amax = graph.amax %x dims = array<i64: 0, 1, 2> : tensor<2x3x4xf32> -> tensor<f32>
  %amax_keep = graph.amax %a dims = array<i64: -2> keepdim = true : tensor<2x3xf32> -> tensor<1x3xf32>
  %mm = graph.matmul %a, %c : tensor<2x3xf32>, tensor<3x5xf32> -> tensor<2x5xf32>
  %bmm = graph.matmul %ba, %bb : tensor<4x2x3xf32>, tensor<4x3x5xf32> -> tensor<4x2x5xf32>
  func.return
}

// CHECK-LABEL: func.func @reductions(
// CHECK-SAME:  [[X:%\w+]]: tensor<2x3x4xf32>, [[A:%\w+]]: tensor<2x3xf32>, [[C:%\w+]]: tensor<3x5xf32>, [[BA:%\w+]]: tensor<4x2x3xf32>, [[BB:%\w+]]: tensor<4x3x5xf32>) {
// CHECK-NEXT:  [[SUM:%\w+]] = graph.sum [[X]] dims = array<i64: 1> : tensor<2x3x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:  [[SUM_KEEP:%\w+]] = graph.sum [[X]] dims = array<i64: 0, 2> keepdim = true : tensor<2x3x4xf32> -> tensor<1x3x1xf32>
// CHECK-NEXT:  [[MEAN:%\w+]] = graph.mean [[X]] dims = array<i64: -1> : tensor<2x3x4xf32> -> tensor<2x3xf32>
// CHECK-NEXT:  [[MEAN_NOKEEP:%\w+]] = graph.mean [[X]] dims = array<i64: -1> : tensor<2x3x4xf32> -> tensor<2x3xf32>
// CHECK-NEXT:  [[AMAX:%\w+]] = graph.amax [[X]] dims = array<i64: 0, 1, 2> : tensor<2x3x4xf32> -> tensor<f32>
// CHECK-NEXT:  [[AMAX_KEEP:%\w+]] = graph.amax [[A]] dims = array<i64: -2> keepdim = true : tensor<2x3xf32> -> tensor<1x3xf32>
// CHECK-NEXT:  [[MM:%\w+]] = graph.matmul [[A]], [[C]] : tensor<2x3xf32>, tensor<3x5xf32> -> tensor<2x5xf32>
// CHECK-NEXT:  [[BMM:%\w+]] = graph.matmul [[BA]], [[BB]] : tensor<4x2x3xf32>, tensor<4x3x5xf32> -> tensor<4x2x5xf32>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }

// A matmul reading its right operand through a permutation: a transposed weight, and
// keys laid out position-first.
func.func @matmul_permuted(%x: tensor<2x3xf32>, %w: tensor<5x3xf32>, %q: tensor<1x2x1x4xf32>, %k: tensor<7x1x2x4xf32>) {
  %linear = graph.matmul_permuted %x, %w rhs_perm = array<i64: 1, 0> : tensor<2x3xf32>, tensor<5x3xf32> -> tensor<2x5xf32>
  %scores = graph.matmul_permuted %q, %k rhs_perm = array<i64: 1, 2, 3, 0> : tensor<1x2x1x4xf32>, tensor<7x1x2x4xf32> -> tensor<1x2x1x7xf32>
  func.return
}

// CHECK-LABEL: func.func @matmul_permuted(
// CHECK-SAME:  [[X:%\w+]]: tensor<2x3xf32>, [[W:%\w+]]: tensor<5x3xf32>, [[Q:%\w+]]: tensor<1x2x1x4xf32>, [[K:%\w+]]: tensor<7x1x2x4xf32>) {
// CHECK-NEXT:  {{%\w+}} = graph.matmul_permuted [[X]], [[W]] rhs_perm = array<i64: 1, 0> : tensor<2x3xf32>, tensor<5x3xf32> -> tensor<2x5xf32>
// CHECK-NEXT:  {{%\w+}} = graph.matmul_permuted [[Q]], [[K]] rhs_perm = array<i64: 1, 2, 3, 0> : tensor<1x2x1x4xf32>, tensor<7x1x2x4xf32> -> tensor<1x2x1x7xf32>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }

// Shape ops; slice with and without a step, concat of one and of two inputs.
func.func @shapes(%x: tensor<2x3x4xf32>, %y: tensor<2x5x4xf32>, %v: tensor<3x1xf32>) {
  %reshape = graph.reshape %x : tensor<2x3x4xf32> -> tensor<6x4xf32>
  %expand = graph.expand %v : tensor<3x1xf32> -> tensor<2x3x4xf32>
  %permute = graph.permute %x perm = array<i64: 2, 0, 1> : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
  %slice = graph.slice %x dim 1 [0 : 2] : tensor<2x3x4xf32> -> tensor<2x2x4xf32>
  %slice_step = graph.slice %x dim -1 [1 : 4 : 2] : tensor<2x3x4xf32> -> tensor<2x3x2xf32>
  %concat = graph.concat %x, %y dim 1 : tensor<2x3x4xf32>, tensor<2x5x4xf32> -> tensor<2x8x4xf32>
  %concat_one = graph.concat %x dim 0 : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
  func.return
}

// CHECK-LABEL: func.func @shapes(
// CHECK-SAME:  [[X:%\w+]]: tensor<2x3x4xf32>, [[Y:%\w+]]: tensor<2x5x4xf32>, [[V:%\w+]]: tensor<3x1xf32>) {
// CHECK-NEXT:  [[RESHAPE:%\w+]] = graph.reshape [[X]] : tensor<2x3x4xf32> -> tensor<6x4xf32>
// CHECK-NEXT:  [[EXPAND:%\w+]] = graph.expand [[V]] : tensor<3x1xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT:  [[PERMUTE:%\w+]] = graph.permute [[X]] perm = array<i64: 2, 0, 1> : tensor<2x3x4xf32> -> tensor<4x2x3xf32>
// CHECK-NEXT:  [[SLICE:%\w+]] = graph.slice [[X]] dim 1{{ ?}}[0 : 2] : tensor<2x3x4xf32> -> tensor<2x2x4xf32>
// CHECK-NEXT:  [[SLICE_STEP:%\w+]] = graph.slice [[X]] dim -1{{ ?}}[1 : 4 : 2] : tensor<2x3x4xf32> -> tensor<2x3x2xf32>
// CHECK-NEXT:  [[CONCAT:%\w+]] = graph.concat [[X]], [[Y]] dim 1 : tensor<2x3x4xf32>, tensor<2x5x4xf32> -> tensor<2x8x4xf32>
// CHECK-NEXT:  [[CONCAT_ONE:%\w+]] = graph.concat [[X]] dim 0 : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }

// Indexing ops; index_put with accumulate absent and true, with broadcast 0-d values.
func.func @indexing(%w: tensor<10x4xf32>, %ids: tensor<2x3xi64>, %x: tensor<5x4xf32>, %rows: tensor<2xi64>, %vals: tensor<2x4xf32>, %s: tensor<f32>, %idx: tensor<5x2xi64>) {
  %emb = graph.embedding %w[%ids] : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
  %put = graph.index_put %x[%rows], %vals : tensor<5x4xf32>, tensor<2xi64>, tensor<2x4xf32> -> tensor<5x4xf32>
  %put_acc = graph.index_put %x[%rows], %s accumulate = true : tensor<5x4xf32>, tensor<2xi64>, tensor<f32> -> tensor<5x4xf32>
  %gather = graph.gather %x[%idx] dim 1 : tensor<5x4xf32>, tensor<5x2xi64> -> tensor<5x2xf32>
  %scatter = graph.scatter %x[%idx] dim 1, %s : tensor<5x4xf32>, tensor<5x2xi64>, tensor<f32> -> tensor<5x4xf32>
  func.return
}

// CHECK-LABEL: func.func @indexing(
// CHECK-SAME:  [[W:%\w+]]: tensor<10x4xf32>, [[IDS:%\w+]]: tensor<2x3xi64>, [[X:%\w+]]: tensor<5x4xf32>, [[ROWS:%\w+]]: tensor<2xi64>, [[VALS:%\w+]]: tensor<2x4xf32>, [[S:%\w+]]: tensor<f32>, [[IDX:%\w+]]: tensor<5x2xi64>) {
// CHECK-NEXT:  [[EMB:%\w+]] = graph.embedding [[W]]{{\[}}[[IDS]]] : tensor<10x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
// CHECK-NEXT:  [[PUT:%\w+]] = graph.index_put [[X]]{{\[}}[[ROWS]]], [[VALS]] : tensor<5x4xf32>, tensor<2xi64>, tensor<2x4xf32> -> tensor<5x4xf32>
// CHECK-NEXT:  [[PUT_ACC:%\w+]] = graph.index_put [[X]]{{\[}}[[ROWS]]], [[S]] accumulate = true : tensor<5x4xf32>, tensor<2xi64>, tensor<f32> -> tensor<5x4xf32>
// CHECK-NEXT:  [[GATHER:%\w+]] = graph.gather [[X]]{{\[}}[[IDX]]] dim 1 : tensor<5x4xf32>, tensor<5x2xi64> -> tensor<5x2xf32>
// CHECK-NEXT:  [[SCATTER:%\w+]] = graph.scatter [[X]]{{\[}}[[IDX]]] dim 1, [[S]] : tensor<5x4xf32>, tensor<5x2xi64>, tensor<f32> -> tensor<5x4xf32>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }

// Composites: softmax family and layer norm with its three results; eps is an f64 float
// attribute printed without its type.
func.func @composites(%x: tensor<2x3x4xf32>, %w: tensor<4xf32>, %w2: tensor<3x4xf32>) {
  %sm = graph.softmax %x dim -1 : tensor<2x3x4xf32>
  %lsm = graph.log_softmax %x dim 1 : tensor<2x3x4xf32>
  %dsm = graph.softmax_backward %x, %sm dim -1 : tensor<2x3x4xf32>
  %dlsm = graph.log_softmax_backward %x, %lsm dim 1 : tensor<2x3x4xf32>
  %y, %mean, %rstd = graph.layer_norm %x, %w, %w dims 1 eps 1.0e-05 : tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>
  %y2, %mean2, %rstd2 = graph.layer_norm %x, %w2, %w2 dims 2 eps 1.0e-03 : tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32> -> tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>
  %dx, %dw, %db = graph.layer_norm_backward %y, %x, %mean, %rstd, %w dims 1 : tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<4xf32> -> tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>
  func.return
}

// CHECK-LABEL: func.func @composites(
// CHECK-SAME:  [[X:%\w+]]: tensor<2x3x4xf32>, [[W:%\w+]]: tensor<4xf32>, [[W2:%\w+]]: tensor<3x4xf32>) {
// CHECK-NEXT:  [[SM:%\w+]] = graph.softmax [[X]] dim -1 : tensor<2x3x4xf32>
// CHECK-NEXT:  [[LSM:%\w+]] = graph.log_softmax [[X]] dim 1 : tensor<2x3x4xf32>
// CHECK-NEXT:  [[DSM:%\w+]] = graph.softmax_backward [[X]], [[SM]] dim -1 : tensor<2x3x4xf32>
// CHECK-NEXT:  [[DLSM:%\w+]] = graph.log_softmax_backward [[X]], [[LSM]] dim 1 : tensor<2x3x4xf32>
// CHECK-NEXT:  [[Y:%\w+]], [[MEAN:%\w+]], [[RSTD:%\w+]] = graph.layer_norm [[X]], [[W]], [[W]] dims 1 eps 1.000000e-05 : tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32> -> tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>
// CHECK-NEXT:  [[Y2:%\w+]], [[MEAN2:%\w+]], [[RSTD2:%\w+]] = graph.layer_norm [[X]], [[W2]], [[W2]] dims 2 eps 1.000000e-03 : tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<3x4xf32> -> tensor<2x3x4xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>
// CHECK-NEXT:  [[DX:%\w+]], [[DW:%\w+]], [[DB:%\w+]] = graph.layer_norm_backward [[Y]], [[X]], [[MEAN]], [[RSTD]], [[W]] dims 1 : tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<4xf32> -> tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }

// Windowed ops; conv2d with groups absent and 2 (strided), their backward ops, max pooling.
func.func @windows(%x: tensor<1x4x8x8xf32>, %w: tensor<6x4x3x3xf32>, %b: tensor<6xf32>, %gw: tensor<6x2x3x3xf32>) {
  %conv = graph.conv2d %x, %w, %b stride array<i64: 1, 1> padding array<i64: 1, 1> dilation array<i64: 1, 1> : tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32> -> tensor<1x6x8x8xf32>
  %gconv = graph.conv2d %x, %gw, %b stride array<i64: 2, 2> padding array<i64: 1, 1> dilation array<i64: 1, 1> groups 2 : tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32> -> tensor<1x6x4x4xf32>
  %dconv = graph.conv2d %x, %w, %b stride array<i64: 1, 2> padding array<i64: 0, 2> dilation array<i64: 2, 1> : tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32> -> tensor<1x6x4x5xf32>
  %dx, %dw, %db = graph.conv2d_backward %conv, %x, %w stride array<i64: 1, 1> padding array<i64: 1, 1> dilation array<i64: 1, 1> : tensor<1x6x8x8xf32>, tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32> -> tensor<6xf32>
  %gdx, %gdw, %gdb = graph.conv2d_backward %gconv, %x, %gw stride array<i64: 2, 2> padding array<i64: 1, 1> dilation array<i64: 1, 1> groups 2 : tensor<1x6x4x4xf32>, tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32> -> tensor<6xf32>
  %pool, %indices = graph.max_pool2d %x kernel array<i64: 2, 2> stride array<i64: 2, 2> padding array<i64: 0, 0> dilation array<i64: 1, 1> : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>
  %dpool = graph.max_pool2d_backward %pool, %x, %indices : tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>, tensor<1x4x8x8xf32>
  %wpool = graph.max_pool2d_backward %pool, %x, %indices window array<i64: 2, 2> stride array<i64: 2, 2> padding array<i64: 0, 0> dilation array<i64: 1, 1> : tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>, tensor<1x4x8x8xf32>
  func.return
}

// CHECK-LABEL: func.func @windows(
// CHECK-SAME:  [[X:%\w+]]: tensor<1x4x8x8xf32>, [[W:%\w+]]: tensor<6x4x3x3xf32>, [[B:%\w+]]: tensor<6xf32>, [[GW:%\w+]]: tensor<6x2x3x3xf32>) {
// CHECK-NEXT:  [[CONV:%\w+]] = graph.conv2d [[X]], [[W]], [[B]] stride array<i64: 1, 1> padding array<i64: 1, 1> dilation array<i64: 1, 1> : tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32> -> tensor<1x6x8x8xf32>
// CHECK-NEXT:  [[GCONV:%\w+]] = graph.conv2d [[X]], [[GW]], [[B]] stride array<i64: 2, 2> padding array<i64: 1, 1> dilation array<i64: 1, 1> groups 2 : tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>, tensor<6xf32> -> tensor<1x6x4x4xf32>
// CHECK-NEXT:  [[DCONV:%\w+]] = graph.conv2d [[X]], [[W]], [[B]] stride array<i64: 1, 2> padding array<i64: 0, 2> dilation array<i64: 2, 1> : tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32> -> tensor<1x6x4x5xf32>
// CHECK-NEXT:  [[DX:%\w+]], [[DW:%\w+]], [[DB:%\w+]] = graph.conv2d_backward [[CONV]], [[X]], [[W]] stride array<i64: 1, 1> padding array<i64: 1, 1> dilation array<i64: 1, 1> : tensor<1x6x8x8xf32>, tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32> -> tensor<6xf32>
// CHECK-NEXT:  [[GDX:%\w+]], [[GDW:%\w+]], [[GDB:%\w+]] = graph.conv2d_backward [[GCONV]], [[X]], [[GW]] stride array<i64: 2, 2> padding array<i64: 1, 1> dilation array<i64: 1, 1> groups 2 : tensor<1x6x4x4xf32>, tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32> -> tensor<6xf32>
// CHECK-NEXT:  [[POOL:%\w+]], [[INDICES:%\w+]] = graph.max_pool2d [[X]] kernel array<i64: 2, 2> stride array<i64: 2, 2> padding array<i64: 0, 0> dilation array<i64: 1, 1> : tensor<1x4x8x8xf32> -> tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>
// CHECK-NEXT:  [[DPOOL:%\w+]] = graph.max_pool2d_backward [[POOL]], [[X]], [[INDICES]] : tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>, tensor<1x4x8x8xf32>
// CHECK-NEXT:  {{%\w+}} = graph.max_pool2d_backward [[POOL]], [[X]], [[INDICES]] window array<i64: 2, 2> stride array<i64: 2, 2> padding array<i64: 0, 0> dilation array<i64: 1, 1> : tensor<1x4x4x4xf32>, tensor<1x4x4x4xi64>, tensor<1x4x8x8xf32>
// CHECK-NEXT:  func.return
// CHECK-NEXT:  }

// graph.fused: a region whose block takes the operands and yields the results; it may
// hold constants and elementwise ops. One with a single input and result, too.
func.func @fused(%x: tensor<2x3xf32>, %r: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>) {
  %out, %mask = graph.fused %x, %r : (tensor<2x3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>) {
  ^bb0(%a: tensor<2x3xf32>, %b: tensor<3xf32>):
    %zero = graph.constant dense<0.0> : tensor<f32>
    %sum = graph.add %a, %b : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
    %relu = graph.relu %sum : tensor<2x3xf32>
    %pos = graph.gt %relu, %zero : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xi1>
    graph.yield %relu, %pos : tensor<2x3xf32>, tensor<2x3xi1>
  }
  %one = graph.fused %out : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%a: tensor<2x3xf32>):
    %e = graph.exp %a : tensor<2x3xf32>
    graph.yield %e : tensor<2x3xf32>
  }
  func.return %one, %mask : tensor<2x3xf32>, tensor<2x3xi1>
}

// CHECK-LABEL: func.func @fused(
// CHECK-SAME:  [[X:%\w+]]: tensor<2x3xf32>, [[R:%\w+]]: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>) {
// CHECK-NEXT:  [[OUT:%\w+]], [[MASK:%\w+]] = graph.fused [[X]], [[R]] : (tensor<2x3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>) {
// CHECK-NEXT:  ^{{\w+}}([[A:%\w+]]: tensor<2x3xf32>, [[B:%\w+]]: tensor<3xf32>):
// CHECK-NEXT:  [[ZERO:%\w+]] = graph.constant dense<0.000000e+00> : tensor<f32>
// CHECK-NEXT:  [[SUM:%\w+]] = graph.add [[A]], [[B]] : tensor<2x3xf32>, tensor<3xf32> -> tensor<2x3xf32>
// CHECK-NEXT:  [[RELU:%\w+]] = graph.relu [[SUM]] : tensor<2x3xf32>
// CHECK-NEXT:  [[POS:%\w+]] = graph.gt [[RELU]], [[ZERO]] : tensor<2x3xf32>, tensor<f32> -> tensor<2x3xi1>
// CHECK-NEXT:  graph.yield [[RELU]], [[POS]] : tensor<2x3xf32>, tensor<2x3xi1>
// CHECK-NEXT:  }
// CHECK-NEXT:  [[ONE:%\w+]] = graph.fused [[OUT]] : (tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT:  ^{{\w+}}([[A:%\w+]]: tensor<2x3xf32>):
// CHECK-NEXT:  [[E:%\w+]] = graph.exp [[A]] : tensor<2x3xf32>
// CHECK-NEXT:  graph.yield [[E]] : tensor<2x3xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  func.return [[ONE]], [[MASK]] : tensor<2x3xf32>, tensor<2x3xi1>
// CHECK-NEXT:  }

// Collectives over a group of ranks: all-reduce (each reduction), all-gather (dim 0
// times the group's size), reduce-scatter (dim 0 divided by it).
func.func @collectives(%x: tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<8x3xf32>, tensor<2x3xf32>) {
  %sum = graph.all_reduce %x "sum" group "0" size 2 : tensor<4x3xf32> -> tensor<4x3xf32>
  %max = graph.all_reduce %sum "max" group "tp" size 2 : tensor<4x3xf32> -> tensor<4x3xf32>
  %gathered = graph.all_gather %max group "0" size 2 : tensor<4x3xf32> -> tensor<8x3xf32>
  %part = graph.reduce_scatter %x "avg" group "0" size 2 : tensor<4x3xf32> -> tensor<2x3xf32>
  func.return %max, %gathered, %part : tensor<4x3xf32>, tensor<8x3xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @collectives(
// CHECK-NEXT:  [[SUM:%\w+]] = graph.all_reduce %x "sum" group "0" size 2 : tensor<4x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT:  [[MAX:%\w+]] = graph.all_reduce [[SUM]] "max" group "tp" size 2 : tensor<4x3xf32> -> tensor<4x3xf32>
// CHECK-NEXT:  %{{\w+}} = graph.all_gather [[MAX]] group "0" size 2 : tensor<4x3xf32> -> tensor<8x3xf32>
// CHECK-NEXT:  %{{\w+}} = graph.reduce_scatter %x "avg" group "0" size 2 : tensor<4x3xf32> -> tensor<2x3xf32>

// The generic form: quoted op names, operand and result types as a function type,
// every property in <{...}> with the defaults the custom parser filled in spelled out.
// GENERIC:      "builtin.module"() ({
// GENERIC-NEXT:   "func.func"() <{sym_name = "unary", function_type = (tensor<2x3xf32>, tensor<4xi64>, tensor<4xi1>) -> ()}> ({
// GENERIC-NEXT:   ^bb0([[X:%\w+]]: tensor<2x3xf32>, %{{\w+}}: tensor<4xi64>, %{{\w+}}: tensor<4xi1>):
// GENERIC-NEXT:     %{{\w+}} = "graph.neg"([[X]]) : (tensor<2x3xf32>) -> tensor<2x3xf32>
// GENERIC:          %{{\w+}} = "graph.convert"([[X]]) : (tensor<2x3xf32>) -> tensor<2x3xf64>
// GENERIC:          %{{\w+}} = "graph.gelu"([[X]]) <{approximate = "none"}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// GENERIC-NEXT:     %{{\w+}} = "graph.gelu"([[X]]) <{approximate = "tanh"}> : (tensor<2x3xf32>) -> tensor<2x3xf32>
// GENERIC:          %{{\w+}} = "graph.add"([[X]], %{{\w+}}) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// GENERIC:          %{{\w+}} = "graph.constant"() <{value = dense<1.500000e+00> : tensor<2x3xf32>}> : () -> tensor<2x3xf32>
// GENERIC:          %{{\w+}} = "graph.sum"(%{{\w+}}) <{dims = array<i64: 1>, keepdim = false}> : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
// GENERIC-NEXT:     %{{\w+}} = "graph.sum"(%{{\w+}}) <{dims = array<i64: 0, 2>, keepdim = true}> : (tensor<2x3x4xf32>) -> tensor<1x3x1xf32>
// GENERIC:          %{{\w+}} = "graph.slice"(%{{\w+}}) <{dim = 1 : i64, start = 0 : i64, end = 2 : i64, step = 1 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x2x4xf32>
// GENERIC:          %{{\w+}} = "graph.concat"(%{{\w+}}, %{{\w+}}) <{dim = 1 : i64}> : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
// GENERIC:          %{{\w+}} = "graph.index_put"(%{{\w+}}, %{{\w+}}, %{{\w+}}) <{accumulate = false}> : (tensor<5x4xf32>, tensor<2xi64>, tensor<2x4xf32>) -> tensor<5x4xf32>
// GENERIC:          %{{\w+}}, %{{\w+}}, %{{\w+}} = "graph.layer_norm"(%{{\w+}}, %{{\w+}}, %{{\w+}}) <{normalized_dims = 1 : i64, eps = 1.000000e-05 : f64}> : (tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x1xf32>, tensor<2x3x1xf32>)
// GENERIC:          %{{\w+}} = "graph.conv2d"(%{{\w+}}, %{{\w+}}, %{{\w+}}) <{stride = array<i64: 1, 1>, padding = array<i64: 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64}> : (tensor<1x4x8x8xf32>, tensor<6x4x3x3xf32>, tensor<6xf32>) -> tensor<1x6x8x8xf32>
// GENERIC:          %{{\w+}}, %{{\w+}} = "graph.fused"(%{{\w+}}, %{{\w+}}) ({
// GENERIC-NEXT:     ^bb0(%{{\w+}}: tensor<2x3xf32>, %{{\w+}}: tensor<3xf32>):
// GENERIC:            "graph.yield"(%{{\w+}}, %{{\w+}}) : (tensor<2x3xf32>, tensor<2x3xi1>) -> ()
// GENERIC-NEXT:     }) : (tensor<2x3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xi1>)
// GENERIC:          %{{\w+}} = "graph.all_reduce"(%{{\w+}}) <{reduce = "sum", group = "0", group_size = 2 : i64}> : (tensor<4x3xf32>) -> tensor<4x3xf32>
// GENERIC:          %{{\w+}} = "graph.all_gather"(%{{\w+}}) <{group = "0", group_size = 2 : i64}> : (tensor<4x3xf32>) -> tensor<8x3xf32>
