# Calibration fit: for every collective entry of a profile, the measured time
# per message size (points) over the fitted piecewise alpha-beta curve
# T(S) = alpha + S / algbw (line), log-log, one panel per entry.
#
# Run by `ddpsim plot fit PROFILE`, which writes a temporary CSV (removed
# afterwards) and sets:
#   csv         columns entry (1..n), kind ("fit" or "point"), bytes, time_us
#   n           number of collective entries
#   titles      one quoted title per entry, in entry order
#   name        the profile's name
#   rows, cols  panel layout
#   out         output path without extension; writes out.png and out.svg
#   png, svg    the files written (ddpsim passes temp files, renamed
#               once gnuplot succeeds); default out.png and out.svg
if (!exists("png")) png = out.".png"
if (!exists("svg")) svg = out.".svg"
set datafile separator ","
set datafile columnheaders
set logscale xy
set grid
set key top left box opaque
set xlabel "message size (bytes, as nccl-tests counts them)"
set ylabel "time (us)"
set format x "%.0s%cB"
set pointsize 0.7

sel(i, k) = (column("entry") == i && strcol("kind") eq k)

do for [fmt in "png svg"] {
  if (fmt eq "png") {
    set terminal pngcairo size 620*cols, 460*rows font ",10"
  } else {
    set terminal svg size 620*cols, 460*rows dynamic font ",10"
  }
  set output (fmt eq "png" ? png : svg)
  set multiplot layout rows, cols title sprintf("%s: collective times, measured and fitted", name) noenhanced
  do for [i=1:n] {
    set title word(titles, i) noenhanced
    plot csv using (sel(i, "fit") ? column("bytes") : NaN):(column("time_us")) \
             with lines lw 2 lc rgb "#1f77b4" title "fitted alpha-beta", \
         csv using (sel(i, "point") ? column("bytes") : NaN):(column("time_us")) \
             with points pt 7 lc rgb "#d62728" title "measured"
  }
  unset multiplot
  set output
}
