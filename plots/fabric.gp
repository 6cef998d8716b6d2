# Fabrics: scaling efficiency and the bus bandwidth of one bucket allreduce
# vs GPUs for one model, one curve per fabric of the study (colour; a fabric
# whose neighbour job communicates, named NAME+nb, dashed beside NAME). Reads
# a `ddpsim simulate` CSV of a scenario with a fabric (docs/fabrics.md).
#
# Run by `ddpsim plot fabric CSV`, which sets:
#   csv      the results file
#   model    the model to draw (one file per model)
#   fabrics  space-separated fabric names, in CSV order
#   out      output path without extension; writes out.png and out.svg
set datafile separator ","
set datafile columnheaders
set key outside right top box
set grid
set logscale x 2
set xlabel "GPUs"
set pointsize 0.8

sel(f) = (strcol("model") eq model && strcol("fabric") eq f && strcol("status") eq "ok")
# NAME and NAME+nb share a colour; the +nb one is dashed.
nb(f) = strstrt(f, "+nb") > 0
base(f) = nb(f) ? f[1:strstrt(f, "+nb") - 1] : f
colour(i) = sum [j=1:i] ((j == 1 || base(word(fabrics, j)) ne base(word(fabrics, j - 1))) ? 1 : 0)
dash(i) = nb(word(fabrics, i)) ? 2 : 1

do for [fmt in "png svg"] {
  if (fmt eq "png") {
    set terminal pngcairo size 1500,620 font ",10"
  } else {
    set terminal svg size 1500,620 dynamic font ",10"
  }
  set output out.".".fmt
  set multiplot layout 1,2 title sprintf("%s: data-parallel scaling by fabric (points that time out are left out)", model)

  set ylabel "scaling efficiency (vs one GPU)"
  unset logscale y
  set yrange [*:1.0]
  plot for [i=1:words(fabrics)] csv \
       using (sel(word(fabrics,i)) ? column("gpus") : NaN):(column("scaling_eff")) \
       with linespoints lc colour(i) dt dash(i) pt (6 + i) title word(fabrics,i)

  set ylabel "bus bandwidth of one bucket allreduce (GB/s)"
  set yrange [0:*]
  plot for [i=1:words(fabrics)] csv \
       using (sel(word(fabrics,i)) ? column("gpus") : NaN):(column("busbw_GBps")) \
       with linespoints lc colour(i) dt dash(i) pt (6 + i) title word(fabrics,i)
  unset multiplot
  set output
}
