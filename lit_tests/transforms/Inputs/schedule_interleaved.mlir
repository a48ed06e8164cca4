// An instruction (step 20) inside a group's span (steps 0 to 24): refused by
// mncore-schedule (mncore-schedule.mlir).
mncore.program @p machine "tiny" {
  mncore.repeat 0 count 3 period 12 {
    mncore.alu 0 "fzero" -> grf0[0 + 4 * i]
  }
  mncore.alu 20 "fzero" -> grf0[16]
}
