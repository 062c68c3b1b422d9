; ModuleID = 'guarded_pad'


define i32 @guarded_pad(ptr noalias nocapture align 64 %a.1, ptr noalias nocapture align 64 %b.2) #0 {
entry:
  br label %for_head0
for_head0:
  %i.3 = phi i32 [ 0, %entry ], [ %t.17, %assert_ok0 ]
  %c.4 = icmp slt i32 %i.3, 8
  br i1 %c.4, label %for_body0, label %for_end0
for_body0:
  %ld.5 = load float, ptr %a.1, align 64
  %ld.6 = load float, ptr %a.1, align 64
  %c.7 = fcmp oeq float %ld.5, %ld.6
  br i1 %c.7, label %assert_ok0, label %assert_fail0
for_end0:
  ret i32 0
assert_ok0:
  %c.8 = icmp sge i32 %i.3, 1
  %c.9 = icmp slt i32 %i.3, 7
  %t.10 = and i1 %c.8, %c.9
  %t.11 = sub nsw i32 %i.3, 1
  %sel.12 = select i1 %t.10, i32 %t.11, i32 0
  %p.13 = getelementptr inbounds float, ptr %a.1, i32 %sel.12
  %ld.14 = load float, ptr %p.13, align 4
  %sel.15 = select i1 %t.10, float %ld.14, float 0x0000000000000000
  %p.16 = getelementptr inbounds float, ptr %b.2, i32 %i.3
  store float %sel.15, ptr %p.16, align 4
  %t.17 = add nsw i32 %i.3, 1
  br label %for_head0
assert_fail0:
  ret i32 1
}

attributes #0 = { nounwind "prefer-vector-width"="256" "frame-pointer"="none" }
