# The numerical step's cost against model size (docs/model-cost.dat), drawn as docs/model-cost.png:
#   gnuplot docs/model-cost.gp   (from the repository's root)
set terminal pngcairo size 900,560 font "Sans,10"
set output "docs/model-cost.png"
set logscale xy
set xlabel "DOFs (uniform shear building)"
set ylabel "one integrator step (us)"
set grid
set key bottom right
set title "Numerical step against model size, 2-core VM, Release; 1024 Hz period 976.6 us"
set arrow from 10,488.3 to 10000,488.3 nohead dashtype 2 lc rgb "gray40"
set label "half the period at 1024 Hz" at 12,600 textcolor rgb "gray40"
plot "docs/model-cost.dat" u 1:2 w lp lw 2 t "RK4 dense", \
     "" u 1:3 w lp lw 2 t "Chen-Ricles dense", \
     "" u 1:4 w lp lw 2 t "KR-alpha dense", \
     "" u 1:5 w lp lw 2 t "generalised-alpha dense", \
     "" u 1:6 w lp lw 2 dt 2 t "RK4 sparse", \
     "" u 1:7 w lp lw 2 dt 2 t "Chen-Ricles sparse", \
     "" u 1:8 w lp lw 2 dt 2 t "KR-alpha sparse", \
     "" u 1:9 w lp lw 2 dt 2 t "generalised-alpha sparse", \
     "" u 1:10 w lp lw 2 dt 3 t "KR-alpha, 20 modes + 1", \
     "" u 1:11 w lp lw 2 dt 3 t "KR-alpha, 50 modes + 1"
