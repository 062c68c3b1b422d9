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
  %ld.15 = load half, ptr %p.12, align 2
  %cv.16 = fpext half %ld.15 to float
  %t.17 = fmul float %cv.14, %cv.16
  %cv.18 = fptrunc float %t.17 to half
  %cv.19 = fpext half %cv.18 to float
  %cv.20 = fptrunc float %cv.19 to half
  %p.21 = getelementptr inbounds half, ptr %t.3, i32 1
  store half %cv.20, ptr %p.21, align 2
  %p.22 = getelementptr inbounds half, ptr %a.1, i32 2
  %ld.23 = load half, ptr %p.22, align 4
  %cv.24 = fpext half %ld.23 to float
  %ld.25 = load half, ptr %p.22, align 4
  %cv.26 = fpext half %ld.25 to float
  %t.27 = fmul float %cv.24, %cv.26
  %cv.28 = fptrunc float %t.27 to half
  %cv.29 = fpext half %cv.28 to float
  %cv.30 = fptrunc float %cv.29 to half
  %p.31 = getelementptr inbounds half, ptr %t.3, i32 2
  store half %cv.30, ptr %p.31, align 4
  %p.32 = getelementptr inbounds half, ptr %a.1, i32 3
  %ld.33 = load half, ptr %p.32, align 2
  %cv.34 = fpext half %ld.33 to float
  %ld.35 = load half, ptr %p.32, align 2
  %cv.36 = fpext half %ld.35 to float
  %t.37 = fmul float %cv.34, %cv.36
  %cv.38 = fptrunc float %t.37 to half
  %cv.39 = fpext half %cv.38 to float
  %cv.40 = fptrunc float %cv.39 to half
  %p.41 = getelementptr inbounds half, ptr %t.3, i32 3
  store half %cv.40, ptr %p.41, align 2
  %cv.42 = fptrunc float 0x0000000000000000 to half
  store half %cv.42, ptr %b.2, align 64
  %ld.43 = load half, ptr %b.2, align 64
  %cv.44 = fpext half %ld.43 to float
  %ld.45 = load half, ptr %t.3, align 64
  %cv.46 = fpext half %ld.45 to float
  %t.47 = fadd reassoc contract float %cv.44, %cv.46
  %cv.48 = fptrunc float %t.47 to half
  %cv.49 = fpext half %cv.48 to float
  %cv.50 = fptrunc float %cv.49 to half
  store half %cv.50, ptr %b.2, align 64
  %ld.51 = load half, ptr %b.2, align 64
  %cv.52 = fpext half %ld.51 to float
  %ld.53 = load half, ptr %p.21, align 2
  %cv.54 = fpext half %ld.53 to float
  %t.55 = fadd reassoc contract float %cv.52, %cv.54
  %cv.56 = fptrunc float %t.55 to half
  %cv.57 = fpext half %cv.56 to float
  %cv.58 = fptrunc float %cv.57 to half
  store half %cv.58, ptr %b.2, align 64
  %ld.59 = load half, ptr %b.2, align 64
  %cv.60 = fpext half %ld.59 to float
  %ld.61 = load half, ptr %p.31, align 4
  %cv.62 = fpext half %ld.61 to float
  %t.63 = fadd reassoc contract float %cv.60, %cv.62
  %cv.64 = fptrunc float %t.63 to half
  %cv.65 = fpext half %cv.64 to float
  %cv.66 = fptrunc float %cv.65 to half
  store half %cv.66, ptr %b.2, align 64
  %ld.67 = load half, ptr %b.2, align 64
  %cv.68 = fpext half %ld.67 to float
  %ld.69 = load half, ptr %p.41, align 2
  %cv.70 = fpext half %ld.69 to float
  %t.71 = fadd reassoc contract float %cv.68, %cv.70
  %cv.72 = fptrunc float %t.71 to half
  %cv.73 = fpext half %cv.72 to float
  %cv.74 = fptrunc float %cv.73 to half
  store half %cv.74, ptr %b.2, align 64
  ret i32 0
}

attributes #0 = { nounwind "prefer-vector-width"="256" "frame-pointer"="none" }
