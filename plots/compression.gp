# Compression trade-off for one model: speedup of each communication hook over
# no compression against the network's line rate, one panel per node count,
# one curve per hook; where a curve crosses 1 (dashed line) compression stops
# paying off, and the break-even rate is marked with a cross on that line.
#
# Run by `ddpsim plot compression CSV`, which derives from a `ddpsim simulate`
# CSV (scenarios/compression.cfg) the files and variables below:
#   data     speedups: model, nodes, gbps, compression, speedup
#   breaks   break-even line rates: model, nodes, compression, gbps
#   model    the model to draw (one file per model)
#   nodes    space-separated node counts, one panel each
#   hooks    space-separated compressions other than none
#   out      output path without extension; writes out.png and out.svg
#   png, svg the files written (ddpsim passes temp files, renamed
#            once gnuplot succeeds); default out.png and out.svg
if (!exists("png")) png = out.".png"
if (!exists("svg")) svg = out.".svg"
set datafile separator ","
set datafile columnheaders
set grid
set logscale x 10
set xlabel "network line rate per NIC (Gb/s)"
set pointsize 0.8

sel(n, h) = (strcol("model") eq model && strcol("nodes") eq n && strcol("compression") eq h)

do for [fmt in "png svg"] {
  if (fmt eq "png") {
    set terminal pngcairo size 1500,560 font ",10"
  } else {
    set terminal svg size 1500,560 dynamic font ",10"
  }
  set output (fmt eq "png" ? png : svg)
  set multiplot layout 1,words(nodes) title sprintf("%s: speedup of gradient compression over none (break-even rates marked)", model)
  do for [k=1:words(nodes)] {
    set title sprintf("%s nodes", word(nodes,k))
    set ylabel (k == 1 ? "speedup over no compression" : "")
    set logscale y 2
    if (k == words(nodes)) { set key outside right top box } else { unset key }
    plot for [i=1:words(hooks)] data \
           using (sel(word(nodes,k), word(hooks,i)) ? column("gbps") : NaN):(column("speedup")) \
           with linespoints lc i pt (4+i) title word(hooks,i), \
         for [i=1:words(hooks)] breaks \
           using (sel(word(nodes,k), word(hooks,i)) ? column("gbps") : NaN):(1.0) \
           with points lc i pt 2 ps 3 lw 2 notitle, \
         1 with lines lc rgb "black" dt 2 notitle
  }
  unset multiplot
  set output
}
