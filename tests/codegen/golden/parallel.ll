; ModuleID = 'parallel'

declare i32 @omp_get_num_threads() nounwind
declare i32 @omp_get_thread_num() nounwind
declare void @GOMP_parallel(ptr, ptr, i32, i32) nounwind
@irc_parallel_mode = external global i32

define i32 @parallel(ptr noalias nocapture align 64 %a.1, ptr noalias nocapture align 64 %b.2, i64 %n.3) #0 {
entry:
  %closure.5 = alloca { i32, ptr, ptr, [64 x i32], i32 }, i64 1, align 64
  %cv.4 = trunc i64 %n.3 to i32
  %cl.6 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32 }, ptr %closure.5, i32 0, i32 0
  store i32 %cv.4, ptr %cl.6, align 4
  %cl.7 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32 }, ptr %closure.5, i32 0, i32 1
  store ptr %b.2, ptr %cl.7, align 8
  %cl.8 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32 }, ptr %closure.5, i32 0, i32 2
  store ptr %a.1, ptr %cl.8, align 8
  %next.9 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32 }, ptr %closure.5, i32 0, i32 3
  %slot.10 = getelementptr inbounds i32, ptr %next.9, i32 0
  store i32 0, ptr %slot.10, align 4
  %slot.11 = getelementptr inbounds i32, ptr %next.9, i32 16
  store i32 0, ptr %slot.11, align 4
  %slot.12 = getelementptr inbounds i32, ptr %next.9, i32 32
  store i32 0, ptr %slot.12, align 4
  %slot.13 = getelementptr inbounds i32, ptr %next.9, i32 48
  store i32 0, ptr %slot.13, align 4
  %err.14 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32 }, ptr %closure.5, i32 0, i32 4
  store i32 0, ptr %err.14, align 4
  %ld.15 = load i32, ptr @irc_parallel_mode, align 4
  %c.16 = icmp eq i32 %ld.15, 0
  br i1 %c.16, label %par_omp0, label %par_serial0
par_omp0:
  call void @GOMP_parallel(ptr @parallel_parallel_0, ptr %closure.5, i32 4, i32 0)
  br label %par_join0
par_serial0:
  call void @parallel_parallel_0(ptr %closure.5)
  br label %par_join0
par_join0:
  %ld.17 = load i32, ptr %err.14, align 4
  %c.18 = icmp eq i32 %ld.17, 0
  br i1 %c.18, label %par_ok0, label %par_fail0
par_ok0:
  ret i32 0
par_fail0:
  ret i32 %ld.17
}

define internal i32 @parallel_parallel_0_body(i32 %n.1, ptr noalias align 64 %b.2, ptr noalias align 64 %a.3, ptr nocapture %next.4) #0 {
entry:
  %nthreads.5 = call i32 @omp_get_num_threads()
  %tid.6 = call i32 @omp_get_thread_num()
  %t.7 = mul nsw i32 %nthreads.5, 8
  %t.8 = sdiv i32 %n.1, %t.7
  %c.9 = icmp slt i32 %t.8, 1
  %sel.10 = select i1 %c.9, i32 1, i32 %t.8
  %t.11 = sub i32 %sel.10, 1
  %t.12 = add i32 %n.1, %t.11
  %t.13 = sdiv i32 %t.12, %sel.10
  br label %range0
range0:
  %k.14 = phi i32 [ 0, %entry ], [ %t.51, %range_next0 ]
  %c.15 = icmp slt i32 %k.14, %nthreads.5
  br i1 %c.15, label %range_setup0, label %done0
range_setup0:
  %t.16 = add i32 %tid.6, %k.14
  %c.17 = icmp sge i32 %t.16, %nthreads.5
  %t.18 = sub i32 %t.16, %nthreads.5
  %sel.19 = select i1 %c.17, i32 %t.18, i32 %t.16
  %t.20 = mul i32 %sel.19, %t.13
  %t.21 = sdiv i32 %t.20, %nthreads.5
  %t.22 = add i32 %sel.19, 1
  %t.23 = mul i32 %t.22, %t.13
  %t.24 = sdiv i32 %t.23, %nthreads.5
  %t.25 = sub i32 %t.24, %t.21
  %t.26 = mul i32 %sel.19, 16
  %p.27 = getelementptr inbounds i32, ptr %next.4, i32 %t.26
  br label %take0
take0:
  %taken.28 = atomicrmw add ptr %p.27, i32 1 monotonic, align 4
  %c.29 = icmp sge i32 %taken.28, %t.25
  br i1 %c.29, label %range_next0, label %run0
run0:
  %t.30 = add i32 %t.21, %taken.28
  %t.31 = mul i32 %t.30, %sel.10
  %t.32 = add nsw i32 %t.31, %sel.10
  %c.33 = icmp slt i32 %t.32, %n.1
  %sel.34 = select i1 %c.33, i32 %t.32, i32 %n.1
  br label %for_head0
range_next0:
  %t.51 = add i32 %k.14, 1
  br label %range0
done0:
  ret i32 0
for_head0:
  %i.35 = phi i32 [ %t.31, %run0 ], [ %t.50, %for_body0 ]
  %c.36 = icmp slt i32 %i.35, %sel.34
  br i1 %c.36, label %for_body0, label %for_end0
for_body0:
  %p.37 = getelementptr inbounds i32, ptr %a.3, i32 %i.35
  %ld.38 = load i32, ptr %p.37, align 4
  %t.39 = ashr i32 %ld.38, 2
  %ld.40 = load i32, ptr %p.37, align 4
  %t.41 = srem i32 %ld.40, 3
  %c.42 = icmp ne i32 %t.41, 0
  %t.43 = xor i32 %t.41, 3
  %c.44 = icmp slt i32 %t.43, 0
  %t.45 = and i1 %c.42, %c.44
  %sel.46 = select i1 %t.45, i32 3, i32 0
  %t.47 = add i32 %t.41, %sel.46
  %t.48 = add nsw i32 %t.39, %t.47
  %p.49 = getelementptr inbounds i32, ptr %b.2, i32 %i.35
  store i32 %t.48, ptr %p.49, align 4
  %t.50 = add nsw i32 %i.35, 1
  br label %for_head0
for_end0:
  br label %take0
}

define internal void @parallel_parallel_0(ptr nocapture %closure.1) #0 {
entry:
  %cl.2 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32 }, ptr %closure.1, i32 0, i32 0
  %ld.3 = load i32, ptr %cl.2, align 4
  %cl.4 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32 }, ptr %closure.1, i32 0, i32 1
  %ld.5 = load ptr, ptr %cl.4, align 8
  %cl.6 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32 }, ptr %closure.1, i32 0, i32 2
  %ld.7 = load ptr, ptr %cl.6, align 8
  %next.8 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32 }, ptr %closure.1, i32 0, i32 3
  %rc.9 = call i32 @parallel_parallel_0_body(i32 %ld.3, ptr %ld.5, ptr %ld.7, ptr %next.8)
  %c.10 = icmp ne i32 %rc.9, 0
  br i1 %c.10, label %fail0, label %done0
fail0:
  %err.11 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32 }, ptr %closure.1, i32 0, i32 4
  store atomic i32 %rc.9, ptr %err.11 monotonic, align 4
  br label %done0
done0:
  ret void
}

attributes #0 = { nounwind "prefer-vector-width"="256" "frame-pointer"="none" }
