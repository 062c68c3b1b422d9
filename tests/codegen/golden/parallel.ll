; ModuleID = 'parallel'

declare i32 @omp_get_num_threads() nounwind
declare i32 @omp_get_thread_num() nounwind
declare void @GOMP_parallel(ptr, ptr, i32, i32) nounwind
@irc_parallel_mode = external global i32
@irc_parallel_until = external global i64
@irc_parallel_hold = external global i64
@irc_parallel_strikes = external global i32
declare i64 @llvm.readcyclecounter()

define i32 @parallel(ptr noalias nocapture align 64 %a.1, ptr noalias nocapture align 64 %b.2, i64 %n.3) #0 {
entry:
  %closure.5 = alloca { i32, ptr, ptr, [64 x i32], i32, i64, i64 }, i64 1, align 64
  %cv.4 = trunc i64 %n.3 to i32
  %cl.6 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32, i64, i64 }, ptr %closure.5, i32 0, i32 0
  store i32 %cv.4, ptr %cl.6, align 4
  %cl.7 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32, i64, i64 }, ptr %closure.5, i32 0, i32 1
  store ptr %b.2, ptr %cl.7, align 8
  %cl.8 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32, i64, i64 }, ptr %closure.5, i32 0, i32 2
  store ptr %a.1, ptr %cl.8, align 8
  %next.9 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32, i64, i64 }, ptr %closure.5, i32 0, i32 3
  %slot.10 = getelementptr inbounds i32, ptr %next.9, i32 0
  store i32 0, ptr %slot.10, align 4
  %slot.11 = getelementptr inbounds i32, ptr %next.9, i32 16
  store i32 0, ptr %slot.11, align 4
  %slot.12 = getelementptr inbounds i32, ptr %next.9, i32 32
  store i32 0, ptr %slot.12, align 4
  %slot.13 = getelementptr inbounds i32, ptr %next.9, i32 48
  store i32 0, ptr %slot.13, align 4
  %err.14 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32, i64, i64 }, ptr %closure.5, i32 0, i32 4
  store i32 0, ptr %err.14, align 4
  %busy.15 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32, i64, i64 }, ptr %closure.5, i32 0, i32 6
  store i64 0, ptr %busy.15, align 8
  %cv.16 = sext i32 %cv.4 to i64
  %t.17 = sdiv i64 %cv.16, 262144
  %c.18 = icmp slt i64 %cv.16, %t.17
  %sel.19 = select i1 %c.18, i64 %cv.16, i64 %t.17
  %c.20 = icmp slt i64 4, %sel.19
  %sel.21 = select i1 %c.20, i64 4, i64 %sel.19
  %cv.22 = trunc i64 %sel.21 to i32
  %ld.23 = load i32, ptr @irc_parallel_mode, align 4
  %t0.24 = call i64 @llvm.readcyclecounter()
  %ld.25 = load i64, ptr @irc_parallel_until, align 8
  %c.26 = icmp eq i32 %ld.23, 0
  %c.27 = icmp uge i64 %t0.24, %ld.25
  %t.28 = and i1 %c.26, %c.27
  %c.29 = icmp sgt i32 %cv.22, 1
  %t.30 = and i1 %t.28, %c.29
  br i1 %t.30, label %par_omp0, label %par_serial0
par_omp0:
  call void @GOMP_parallel(ptr @parallel_parallel_0, ptr %closure.5, i32 %cv.22, i32 0)
  %t1.31 = call i64 @llvm.readcyclecounter()
  %tdone.32 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32, i64, i64 }, ptr %closure.5, i32 0, i32 5
  %ld.33 = load i64, ptr %tdone.32, align 8
  %ld.34 = load i64, ptr %busy.15, align 8
  %t.35 = sub i64 %ld.33, %t0.24
  %t.36 = add i64 %t.35, %ld.34
  %t.37 = sub i64 %t1.31, %t0.24
  %t.38 = add i64 %t.36, 300000
  %c.39 = icmp sgt i64 %t.37, %t.38
  %ld.40 = load i32, ptr @irc_parallel_strikes, align 4
  %t.41 = add i32 %ld.40, 1
  %sel.42 = select i1 %c.39, i32 %t.41, i32 0
  %c.43 = icmp sge i32 %sel.42, 2
  %sel.44 = select i1 %c.43, i32 0, i32 %sel.42
  store i32 %sel.44, ptr @irc_parallel_strikes, align 4
  %ld.45 = load i64, ptr @irc_parallel_hold, align 8
  %c.46 = icmp slt i64 %ld.45, 150000000
  %sel.47 = select i1 %c.46, i64 150000000, i64 %ld.45
  %t.48 = add i64 %t1.31, %sel.47
  %sel.49 = select i1 %c.43, i64 %t.48, i64 %ld.25
  store i64 %sel.49, ptr @irc_parallel_until, align 8
  %t.50 = shl i64 %sel.47, 1
  %c.51 = icmp sgt i64 %t.50, 3000000000
  %sel.52 = select i1 %c.51, i64 3000000000, i64 %t.50
  %sel.53 = select i1 %c.39, i64 %sel.47, i64 0
  %sel.54 = select i1 %c.43, i64 %sel.52, i64 %sel.53
  store i64 %sel.54, ptr @irc_parallel_hold, align 8
  br label %par_join0
par_serial0:
  call void @parallel_parallel_0(ptr %closure.5)
  br label %par_join0
par_join0:
  %ld.55 = load i32, ptr %err.14, align 4
  %c.56 = icmp eq i32 %ld.55, 0
  br i1 %c.56, label %par_ok0, label %par_fail0
par_ok0:
  ret i32 0
par_fail0:
  ret i32 %ld.55
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
  %cl.2 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32, i64, i64 }, ptr %closure.1, i32 0, i32 0
  %ld.3 = load i32, ptr %cl.2, align 4
  %cl.4 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32, i64, i64 }, ptr %closure.1, i32 0, i32 1
  %ld.5 = load ptr, ptr %cl.4, align 8
  %cl.6 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32, i64, i64 }, ptr %closure.1, i32 0, i32 2
  %ld.7 = load ptr, ptr %cl.6, align 8
  %next.8 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32, i64, i64 }, ptr %closure.1, i32 0, i32 3
  %start.9 = call i64 @llvm.readcyclecounter()
  %rc.10 = call i32 @parallel_parallel_0_body(i32 %ld.3, ptr %ld.5, ptr %ld.7, ptr %next.8)
  %end.11 = call i64 @llvm.readcyclecounter()
  %tid.12 = call i32 @omp_get_thread_num()
  %c.13 = icmp eq i32 %tid.12, 0
  br i1 %c.13, label %master0, label %others0
master0:
  %tdone.14 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32, i64, i64 }, ptr %closure.1, i32 0, i32 5
  store i64 %end.11, ptr %tdone.14, align 8
  br label %timed0
others0:
  %busy.15 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32, i64, i64 }, ptr %closure.1, i32 0, i32 6
  %t.16 = sub i64 %end.11, %start.9
  atomicrmw add ptr %busy.15, i64 %t.16 monotonic, align 8
  br label %timed0
timed0:
  %c.17 = icmp ne i32 %rc.10, 0
  br i1 %c.17, label %fail0, label %done0
fail0:
  %err.18 = getelementptr inbounds { i32, ptr, ptr, [64 x i32], i32, i64, i64 }, ptr %closure.1, i32 0, i32 4
  store atomic i32 %rc.10, ptr %err.18 monotonic, align 4
  br label %done0
done0:
  ret void
}

attributes #0 = { nounwind "prefer-vector-width"="256" "frame-pointer"="none" }
