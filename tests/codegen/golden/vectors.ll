; ModuleID = 'vectors'

declare <8 x float> @llvm.masked.gather.v8f32.v8p0(<8 x ptr>, i32, <8 x i1>, <8 x float>)
declare <8 x float> @llvm.fmuladd.v8f32(<8 x float>, <8 x float>, <8 x float>)

define i32 @vectors(ptr noalias nocapture align 64 %a.1, ptr noalias nocapture align 64 %b.2) #0 {
entry:
  br label %for_head0
for_head0:
  %i.3 = phi i32 [ 0, %entry ], [ %t.17, %for_body0 ]
  %c.4 = icmp slt i32 %i.3, 8
  br i1 %c.4, label %for_body0, label %for_end0
for_body0:
  %bc.5 = insertelement <8 x i32> poison, i32 %i.3, i32 0
  %splat.6 = shufflevector <8 x i32> %bc.5, <8 x i32> poison, <8 x i32> zeroinitializer
  %t.7 = add nsw <8 x i32> %splat.6, <i32 0, i32 8, i32 16, i32 24, i32 32, i32 40, i32 48, i32 56>
  %p.8 = getelementptr inbounds float, ptr %a.1, <8 x i32> %t.7
  %call.9 = call <8 x float> @llvm.masked.gather.v8f32.v8p0(<8 x ptr> %p.8, i32 4, <8 x i1> <i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true, i1 true>, <8 x float> poison)
  %bc.10 = insertelement <8 x float> poison, float 0x3FE0000000000000, i32 0
  %splat.11 = shufflevector <8 x float> %bc.10, <8 x float> poison, <8 x i32> zeroinitializer
  %t.12 = mul nsw i32 %i.3, 8
  %p.13 = getelementptr inbounds float, ptr %a.1, i32 %t.12
  %ld.14 = load <8 x float>, ptr %p.13, align 32
  %fma.15 = call <8 x float> @llvm.fmuladd.v8f32(<8 x float> %call.9, <8 x float> %splat.11, <8 x float> %ld.14)
  %p.16 = getelementptr inbounds float, ptr %b.2, i32 %t.12
  store <8 x float> %fma.15, ptr %p.16, align 32
  %t.17 = add nsw i32 %i.3, 1
  br label %for_head0
for_end0:
  ret i32 0
}

attributes #0 = { nounwind "prefer-vector-width"="256" "frame-pointer"="none" }
