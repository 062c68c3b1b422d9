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
  %cv.15 = sext i32 %cv.4 to i64
  %t.16 = sdiv i64 %cv.15, 262144
  %c.17 = icmp slt i64 %cv.15, %t.16
  %sel.18 = select i1 %c.17, i64 %cv.15, i64 %t.16
  %c.19 = icmp slt i64 4, %sel.18
  %sel.20 = select i1 %c.19, i64 4, i64 %sel.18
  %cv.21 = trunc i64 %sel.20 to i32
  %ld.22 = load i32, ptr @irc_parallel_mode, align 4
  %c.23 = icmp eq i32 %ld.22, 0
  %c.24 = icmp sgt i32 %cv.21, 1
  %t.25 = and i1 %c.23, %c.24
  br i1 %t.25, label %par_omp0, label %par_serial0
par_omp0:
  call void @GOMP_parallel(ptr @parallel_parallel_0, ptr %closure.5, i32 %cv.21, i32 0)
  br label %par_join0
par_serial0:
  call void @parallel_parallel_0(ptr %closure.5)
  br label %par_join0
par_join0:
  %ld.26 = load i32, ptr %err.14, align 4
  %c.27 = icmp eq i32 %ld.26, 0
  br i1 %c.27, label %par_ok0, label %par_fail0
par_ok0:
  ret i32 0
par_fail0:
  ret i32 %ld.26
}

define internal i32 @parallel_parallel_0_body(i32 %n.1, ptr noalias align 64 %b.2, ptr noalias align 64 %a.3, ptr nocapture %next.4) #0 {
entry:
  %nthreads.5 = call i32 @omp_get_num_threads()
  %tid.6 = call i32 @omp_get_thread_num()
  %c.7 = icmp slt i32 4, %nthreads.5
  %sel.8 = select i1 %c.7, i32 4, i32 %nthreads.5
  %c.9 = icmp slt i32 %tid.6, %sel.8
  %sel.10 = select i1 %c.9, i32 %tid.6, i32 0
  %t.11 = mul nsw i32 %sel.8, 8
  %t.12 = sdiv i32 %n.1, %t.11
  %c.13 = icmp slt i32 %t.12, 1
  %sel.14 = select i1 %c.13, i32 1, i32 %t.12
  %t.15 = sub i32 %sel.14, 1
  %t.16 = add i32 %n.1, %t.15
  %t.17 = sdiv i32 %t.16, %sel.14
  br label %range0
range0:
  %k.18 = phi i32 [ 0, %entry ], [ %t.55, %range_next0 ]
  %c.19 = icmp slt i32 %k.18, %sel.8
  br i1 %c.19, label %range_setup0, label %done0
range_setup0:
  %t.20 = add i32 %sel.10, %k.18
  %c.21 = icmp sge i32 %t.20, %sel.8
  %t.22 = sub i32 %t.20, %sel.8
  %sel.23 = select i1 %c.21, i32 %t.22, i32 %t.20
  %t.24 = mul i32 %sel.23, %t.17
  %t.25 = sdiv i32 %t.24, %sel.8
  %t.26 = add i32 %sel.23, 1
  %t.27 = mul i32 %t.26, %t.17
  %t.28 = sdiv i32 %t.27, %sel.8
  %t.29 = sub i32 %t.28, %t.25
  %t.30 = mul i32 %sel.23, 16
  %p.31 = getelementptr inbounds i32, ptr %next.4, i32 %t.30
  br label %take0
take0:
  %taken.32 = atomicrmw add ptr %p.31, i32 1 monotonic, align 4
  %c.33 = icmp sge i32 %taken.32, %t.29
  br i1 %c.33, label %range_next0, label %run0
run0:
  %t.34 = add i32 %t.25, %taken.32
  %t.35 = mul i32 %t.34, %sel.14
  %t.36 = add nsw i32 %t.35, %sel.14
  %c.37 = icmp slt i32 %t.36, %n.1
  %sel.38 = select i1 %c.37, i32 %t.36, i32 %n.1
  br label %for_head0
range_next0:
  %t.55 = add i32 %k.18, 1
  br label %range0
done0:
  ret i32 0
for_head0:
  %i.39 = phi i32 [ %t.35, %run0 ], [ %t.54, %for_body0 ]
  %c.40 = icmp slt i32 %i.39, %sel.38
  br i1 %c.40, label %for_body0, label %for_end0
for_body0:
  %p.41 = getelementptr inbounds i32, ptr %a.3, i32 %i.39
  %ld.42 = load i32, ptr %p.41, align 4
  %t.43 = ashr i32 %ld.42, 2
  %ld.44 = load i32, ptr %p.41, align 4
  %t.45 = srem i32 %ld.44, 3
  %c.46 = icmp ne i32 %t.45, 0
  %t.47 = xor i32 %t.45, 3
  %c.48 = icmp slt i32 %t.47, 0
  %t.49 = and i1 %c.46, %c.48
  %sel.50 = select i1 %t.49, i32 3, i32 0
  %t.51 = add i32 %t.45, %sel.50
  %t.52 = add nsw i32 %t.43, %t.51
  %p.53 = getelementptr inbounds i32, ptr %b.2, i32 %i.39
  store i32 %t.52, ptr %p.53, align 4
  %t.54 = add nsw i32 %i.39, 1
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
