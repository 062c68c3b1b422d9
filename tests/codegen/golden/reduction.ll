; ModuleID = 'reduction'


define i32 @reduction(ptr noalias nocapture align 64 %a.1, ptr noalias nocapture align 64 %s.2) #0 {
entry:
  br label %for_head0
for_head0:
  %i.3 = phi i32 [ 0, %entry ], [ %t.16, %for_end1 ]
  %c.4 = icmp slt i32 %i.3, 8
  br i1 %c.4, label %for_body0, label %for_end0
for_body0:
  %p.5 = getelementptr inbounds float, ptr %s.2, i32 %i.3
  store float 0x0000000000000000, ptr %p.5, align 4
  br label %for_head1
for_end0:
  ret i32 0
for_head1:
  %k.6 = phi i32 [ 0, %for_body0 ], [ %t.15, %for_body1 ]
  %c.7 = icmp slt i32 %k.6, 32
  br i1 %c.7, label %for_body1, label %for_end1
for_body1:
  %p.8 = getelementptr inbounds float, ptr %s.2, i32 %i.3
  %ld.9 = load float, ptr %p.8, align 4
  %t.10 = mul nsw i32 %i.3, 32
  %t.11 = add nsw i32 %t.10, %k.6
  %p.12 = getelementptr inbounds float, ptr %a.1, i32 %t.11
  %ld.13 = load float, ptr %p.12, align 4
  %t.14 = fadd reassoc contract float %ld.9, %ld.13
  store float %t.14, ptr %p.8, align 4
  %t.15 = add nsw i32 %k.6, 1
  br label %for_head1
for_end1:
  %t.16 = add nsw i32 %i.3, 1
  br label %for_head0, !llvm.loop !1
}

attributes #0 = { nounwind "prefer-vector-width"="256" "frame-pointer"="none" }
!0 = !{!"llvm.loop.unroll.disable"}
!1 = distinct !{!1, !0}
