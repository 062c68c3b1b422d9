; ModuleID = 'parallel'

declare i32 @omp_get_num_threads() nounwind
declare void @GOMP_parallel(ptr, ptr, i32, i32) nounwind
@irc_parallel_mode = external global i32

define i32 @parallel(ptr noalias nocapture align 64 %a.1, ptr noalias nocapture align 64 %b.2, i64 %n.3) #0 {
entry:
  %closure.5 = alloca { i32, ptr, ptr, i32, i32 }, i64 1, align 64
  %cv.4 = trunc i64 %n.3 to i32
  %cl.6 = getelementptr inbounds { i32, ptr, ptr, i32, i32 }, ptr %closure.5, i32 0, i32 0
  store i32 %cv.4, ptr %cl.6, align 4
  %cl.7 = getelementptr inbounds { i32, ptr, ptr, i32, i32 }, ptr %closure.5, i32 0, i32 1
  store ptr %b.2, ptr %cl.7, align 8
  %cl.8 = getelementptr inbounds { i32, ptr, ptr, i32, i32 }, ptr %closure.5, i32 0, i32 2
  store ptr %a.1, ptr %cl.8, align 8
  %next.9 = getelementptr inbounds { i32, ptr, ptr, i32, i32 }, ptr %closure.5, i32 0, i32 3
  store i32 0, ptr %next.9, align 4
  %err.10 = getelementptr inbounds { i32, ptr, ptr, i32, i32 }, ptr %closure.5, i32 0, i32 4
  store i32 0, ptr %err.10, align 4
  %ld.11 = load i32, ptr @irc_parallel_mode, align 4
  %c.12 = icmp eq i32 %ld.11, 0
  br i1 %c.12, label %par_omp0, label %par_serial0
par_omp0:
  call void @GOMP_parallel(ptr @parallel_parallel_0, ptr %closure.5, i32 4, i32 0)
  br label %par_join0
par_serial0:
  call void @parallel_parallel_0(ptr %closure.5)
  br label %par_join0
par_join0:
  %ld.13 = load i32, ptr %err.10, align 4
  %c.14 = icmp eq i32 %ld.13, 0
  br i1 %c.14, label %par_ok0, label %par_fail0
par_ok0:
  ret i32 0
par_fail0:
  ret i32 %ld.13
}

define internal i32 @parallel_parallel_0_body(i32 %n.1, ptr noalias align 64 %b.2, ptr noalias align 64 %a.3, ptr nocapture %next.4) #0 {
entry:
  %nthreads.5 = call i32 @omp_get_num_threads()
  %t.6 = mul nsw i32 %nthreads.5, 8
  %t.7 = sdiv i32 %n.1, %t.6
  %c.8 = icmp slt i32 %t.7, 1
  %sel.9 = select i1 %c.8, i32 1, i32 %t.7
  br label %take0
take0:
  %first.10 = atomicrmw add ptr %next.4, i32 %sel.9 monotonic, align 4
  %c.11 = icmp sge i32 %first.10, %n.1
  br i1 %c.11, label %done0, label %run0
run0:
  %t.12 = add nsw i32 %first.10, %sel.9
  %c.13 = icmp slt i32 %t.12, %n.1
  %sel.14 = select i1 %c.13, i32 %t.12, i32 %n.1
  br label %for_head0
done0:
  ret i32 0
for_head0:
  %i.15 = phi i32 [ %first.10, %run0 ], [ %t.30, %for_body0 ]
  %c.16 = icmp slt i32 %i.15, %sel.14
  br i1 %c.16, label %for_body0, label %for_end0
for_body0:
  %p.17 = getelementptr inbounds i32, ptr %a.3, i32 %i.15
  %ld.18 = load i32, ptr %p.17, align 4
  %t.19 = ashr i32 %ld.18, 2
  %ld.20 = load i32, ptr %p.17, align 4
  %t.21 = srem i32 %ld.20, 3
  %c.22 = icmp ne i32 %t.21, 0
  %t.23 = xor i32 %t.21, 3
  %c.24 = icmp slt i32 %t.23, 0
  %t.25 = and i1 %c.22, %c.24
  %sel.26 = select i1 %t.25, i32 3, i32 0
  %t.27 = add i32 %t.21, %sel.26
  %t.28 = add nsw i32 %t.19, %t.27
  %p.29 = getelementptr inbounds i32, ptr %b.2, i32 %i.15
  store i32 %t.28, ptr %p.29, align 4
  %t.30 = add nsw i32 %i.15, 1
  br label %for_head0
for_end0:
  br label %take0
}

define internal void @parallel_parallel_0(ptr nocapture %closure.1) #0 {
entry:
  %cl.2 = getelementptr inbounds { i32, ptr, ptr, i32, i32 }, ptr %closure.1, i32 0, i32 0
  %ld.3 = load i32, ptr %cl.2, align 4
  %cl.4 = getelementptr inbounds { i32, ptr, ptr, i32, i32 }, ptr %closure.1, i32 0, i32 1
  %ld.5 = load ptr, ptr %cl.4, align 8
  %cl.6 = getelementptr inbounds { i32, ptr, ptr, i32, i32 }, ptr %closure.1, i32 0, i32 2
  %ld.7 = load ptr, ptr %cl.6, align 8
  %next.8 = getelementptr inbounds { i32, ptr, ptr, i32, i32 }, ptr %closure.1, i32 0, i32 3
  %rc.9 = call i32 @parallel_parallel_0_body(i32 %ld.3, ptr %ld.5, ptr %ld.7, ptr %next.8)
  %c.10 = icmp ne i32 %rc.9, 0
  br i1 %c.10, label %fail0, label %done0
fail0:
  %err.11 = getelementptr inbounds { i32, ptr, ptr, i32, i32 }, ptr %closure.1, i32 0, i32 4
  store atomic i32 %rc.9, ptr %err.11 monotonic, align 4
  br label %done0
done0:
  ret void
}

attributes #0 = { nounwind "prefer-vector-width"="256" "frame-pointer"="none" }
