; ModuleID = 'elementwise'

declare float @llvm.fmuladd.f32(float, float, float)

define i32 @elementwise(ptr noalias nocapture align 64 %a.1, ptr noalias nocapture align 64 %b.2, ptr noalias nocapture align 64 %c.3) #0 {
entry:
  br label %for_head0
for_head0:
  %i.4 = phi i32 [ 0, %entry ], [ %t.12, %for_body0 ]
  %c.5 = icmp slt i32 %i.4, 64
  br i1 %c.5, label %for_body0, label %for_end0
for_body0:
  %p.6 = getelementptr inbounds float, ptr %a.1, i32 %i.4
  %ld.7 = load float, ptr %p.6, align 4
  %p.8 = getelementptr inbounds float, ptr %b.2, i32 %i.4
  %ld.9 = load float, ptr %p.8, align 4
  %fma.10 = call float @llvm.fmuladd.f32(float %ld.7, float %ld.9, float 0x3FF0000000000000)
  %p.11 = getelementptr inbounds float, ptr %c.3, i32 %i.4
  store float %fma.10, ptr %p.11, align 4
  %t.12 = add nsw i32 %i.4, 1
  br label %for_head0
for_end0:
  ret i32 0
}

attributes #0 = { nounwind "prefer-vector-width"="256" "frame-pointer"="none" }
