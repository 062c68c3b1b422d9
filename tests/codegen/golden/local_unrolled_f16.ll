; ModuleID = 'local_unrolled_f16'


define i32 @local_unrolled_f16(ptr noalias nocapture align 64 %a.1, ptr noalias nocapture align 64 %b.2) #0 {
entry:
  %t.3 = alloca half, i64 4, align 64
  %ld.4 = load half, ptr %a.1, align 64
  %cv.5 = fpext half %ld.4 to float
  %ld.6 = load half, ptr %a.1, align 64
  %cv.7 = fpext half %ld.6 to float
  %t.8 = fmul float %cv.5, %cv.7
  %cv.9 = fptrunc float %t.8 to half
  %cv.10 = fpext half %cv.9 to float
  %cv.11 = fptrunc float %cv.10 to half
  store half %cv.11, ptr %t.3, align 64
  %p.12 = getelementptr inbounds half, ptr %a.1, i32 1
  %ld.13 = load half, ptr %p.12, align 2
  %cv.14 = fpext half %ld.13 to float
  %p.15 = getelementptr inbounds half, ptr %a.1, i32 1
  %ld.16 = load half, ptr %p.15, align 2
  %cv.17 = fpext half %ld.16 to float
  %t.18 = fmul float %cv.14, %cv.17
  %cv.19 = fptrunc float %t.18 to half
  %cv.20 = fpext half %cv.19 to float
  %cv.21 = fptrunc float %cv.20 to half
  %p.22 = getelementptr inbounds half, ptr %t.3, i32 1
  store half %cv.21, ptr %p.22, align 2
  %p.23 = getelementptr inbounds half, ptr %a.1, i32 2
  %ld.24 = load half, ptr %p.23, align 4
  %cv.25 = fpext half %ld.24 to float
  %p.26 = getelementptr inbounds half, ptr %a.1, i32 2
  %ld.27 = load half, ptr %p.26, align 4
  %cv.28 = fpext half %ld.27 to float
  %t.29 = fmul float %cv.25, %cv.28
  %cv.30 = fptrunc float %t.29 to half
  %cv.31 = fpext half %cv.30 to float
  %cv.32 = fptrunc float %cv.31 to half
  %p.33 = getelementptr inbounds half, ptr %t.3, i32 2
  store half %cv.32, ptr %p.33, align 4
  %p.34 = getelementptr inbounds half, ptr %a.1, i32 3
  %ld.35 = load half, ptr %p.34, align 2
  %cv.36 = fpext half %ld.35 to float
  %p.37 = getelementptr inbounds half, ptr %a.1, i32 3
  %ld.38 = load half, ptr %p.37, align 2
  %cv.39 = fpext half %ld.38 to float
  %t.40 = fmul float %cv.36, %cv.39
  %cv.41 = fptrunc float %t.40 to half
  %cv.42 = fpext half %cv.41 to float
  %cv.43 = fptrunc float %cv.42 to half
  %p.44 = getelementptr inbounds half, ptr %t.3, i32 3
  store half %cv.43, ptr %p.44, align 2
  %cv.45 = fptrunc float 0x0000000000000000 to half
  store half %cv.45, ptr %b.2, align 64
  %ld.46 = load half, ptr %b.2, align 64
  %cv.47 = fpext half %ld.46 to float
  %ld.48 = load half, ptr %t.3, align 64
  %cv.49 = fpext half %ld.48 to float
  %t.50 = fadd reassoc contract float %cv.47, %cv.49
  %cv.51 = fptrunc float %t.50 to half
  %cv.52 = fpext half %cv.51 to float
  %cv.53 = fptrunc float %cv.52 to half
  store half %cv.53, ptr %b.2, align 64
  %ld.54 = load half, ptr %b.2, align 64
  %cv.55 = fpext half %ld.54 to float
  %p.56 = getelementptr inbounds half, ptr %t.3, i32 1
  %ld.57 = load half, ptr %p.56, align 2
  %cv.58 = fpext half %ld.57 to float
  %t.59 = fadd reassoc contract float %cv.55, %cv.58
  %cv.60 = fptrunc float %t.59 to half
  %cv.61 = fpext half %cv.60 to float
  %cv.62 = fptrunc float %cv.61 to half
  store half %cv.62, ptr %b.2, align 64
  %ld.63 = load half, ptr %b.2, align 64
  %cv.64 = fpext half %ld.63 to float
  %p.65 = getelementptr inbounds half, ptr %t.3, i32 2
  %ld.66 = load half, ptr %p.65, align 4
  %cv.67 = fpext half %ld.66 to float
  %t.68 = fadd reassoc contract float %cv.64, %cv.67
  %cv.69 = fptrunc float %t.68 to half
  %cv.70 = fpext half %cv.69 to float
  %cv.71 = fptrunc float %cv.70 to half
  store half %cv.71, ptr %b.2, align 64
  %ld.72 = load half, ptr %b.2, align 64
  %cv.73 = fpext half %ld.72 to float
  %p.74 = getelementptr inbounds half, ptr %t.3, i32 3
  %ld.75 = load half, ptr %p.74, align 2
  %cv.76 = fpext half %ld.75 to float
  %t.77 = fadd reassoc contract float %cv.73, %cv.76
  %cv.78 = fptrunc float %t.77 to half
  %cv.79 = fpext half %cv.78 to float
  %cv.80 = fptrunc float %cv.79 to half
  store half %cv.80, ptr %b.2, align 64
  ret i32 0
}

attributes #0 = { nounwind "prefer-vector-width"="256" "frame-pointer"="none" }
