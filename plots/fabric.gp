# Fabrics: scaling efficiency and the bus bandwidth of one bucket allreduce
# vs GPUs for one model, one curve per fabric of the study (colour; a fabric
# whose neighbour job communicates, named NAME+nb, dashed beside NAME). The
# top row gives the values, where fabrics that cost the same lie on one curve;
# the bottom row gives each fabric's change against the study's first fabric
# (the baseline: 1to1-rail in scenarios/fabric.cfg), with each fabric's points
# set side by side around their GPU count, so that fabrics with the same
# value stay apart. Reads a `ddpsim simulate` CSV of a scenario with a fabric
# (docs/fabrics.md).
#
# Run by `ddpsim plot fabric CSV`, which sets:
#   csv      the results file
#   model    the model to draw (one file per model)
#   fabrics  space-separated fabric names, in CSV order (the first: baseline)
#   devices  what a rank is, plural and singular, and where it must fit: 'GPUs',
#            device 'GPU', memory 'GPU memory' (the default), or 'CPU ranks',
#            'CPU rank', 'memory' for a study on a CPU profile
#   out      output path without extension; writes out.png and out.svg
#   png, svg the files written (ddpsim passes temp files, renamed
#            once gnuplot succeeds); default out.png and out.svg
if (!exists("png")) png = out.".png"
if (!exists("svg")) svg = out.".svg"
if (!exists("devices")) devices = "GPUs"
if (!exists("device")) device = "GPU"
if (!exists("memory")) memory = "GPU memory"
set datafile separator ","
set datafile columnheaders
set grid
set logscale x 2
set xlabel devices
set pointsize 0.8

sel(f) = (strcol("model") eq model && strcol("fabric") eq f && strcol("status") eq "ok")
# NAME and NAME+nb share a colour; the +nb one is dashed.
nb(f) = strstrt(f, "+nb") > 0
base(f) = nb(f) ? f[1:strstrt(f, "+nb") - 1] : f
colour(i) = sum [j=1:i] ((j == 1 || base(word(fabrics, j)) ne base(word(fabrics, j - 1))) ? 1 : 0)
dash(i) = nb(word(fabrics, i)) ? 2 : 1
# Fabric i's points a little left or right of their GPU count (log scale).
nf = words(fabrics)
beside(i) = column("gpus") * 2 ** ((i - (nf + 1) / 2.0) * 0.6 / nf)

# The baseline's values by GPU count (G, E, B), read once; at(g, j) finds g.
baseline = word(fabrics, 1)
undefine STATS_records
stats csv using (sel(baseline) ? column("gpus") : NaN) nooutput
nb0 = exists("STATS_records") ? STATS_records : 0
array G[nb0 > 0 ? nb0 : 1]
array E[nb0 > 0 ? nb0 : 1]
array B[nb0 > 0 ? nb0 : 1]
G[1] = NaN
k = 0
if (nb0 > 0) {
  stats csv using (sel(baseline) ? (k = k + 1, G[k] = column("gpus"), E[k] = column("scaling_eff"), \
                                    B[k] = column("busbw_GBps"), 0) : NaN) nooutput
}
at(g, j) = j > k ? 0 : (G[j] == g ? j : at(g, j + 1))
pct(v, ref) = ref > 0 ? 100.0 * (v / ref - 1) : NaN
eff_change(g, v) = at(g, 1) ? pct(v, E[at(g, 1)]) : NaN
bw_change(g, v) = at(g, 1) ? pct(v, B[at(g, 1)]) : NaN

do for [fmt in "png svg"] {
  if (fmt eq "png") {
    set terminal pngcairo size 1500,1040 font ",10"
  } else {
    set terminal svg size 1500,1040 dynamic font ",10"
  }
  set output (fmt eq "png" ? png : svg)
  set multiplot layout 2,2 title sprintf("%s: data-parallel scaling by fabric (points that time out or do not fit in %s are left out)", model, memory)

  unset key
  set title "scaling efficiency (curves that coincide are equal: see below)"
  set ylabel "scaling efficiency (vs one ".device.")"
  set yrange [*:1.0]
  plot for [i=1:nf] csv \
       using (sel(word(fabrics,i)) ? column("gpus") : NaN):(column("scaling_eff")) \
       with linespoints lc colour(i) dt dash(i) pt (6 + i) title word(fabrics,i)

  set key outside right top box
  set title "bus bandwidth of one bucket allreduce (curves that coincide are equal: see below)"
  set ylabel "bus bandwidth (GB/s)"
  set yrange [0:*]
  plot for [i=1:nf] csv \
       using (sel(word(fabrics,i)) ? column("gpus") : NaN):(column("busbw_GBps")) \
       with linespoints lc colour(i) dt dash(i) pt (6 + i) title word(fabrics,i)

  # 0 off the frame, and no empty octave beside the points set aside.
  set autoscale xfix
  set offsets graph 0.04, graph 0.04, graph 0.08, graph 0.08
  set pointsize 1.1
  unset key
  set title sprintf("scaling efficiency against %s (0: the same; each fabric's points side by side)", baseline)
  set ylabel sprintf("change against %s (%%)", baseline)
  set yrange [*:*]
  plot for [i=1:nf] csv \
       using (sel(word(fabrics,i)) ? beside(i) : NaN):(eff_change(column("gpus"), column("scaling_eff"))) \
       with linespoints lc colour(i) dt dash(i) pt (6 + i) title word(fabrics,i), \
       0 with lines lc rgb "black" dt 3 notitle

  set key outside right top box
  set title sprintf("bus bandwidth against %s (0: the same; each fabric's points side by side)", baseline)
  plot for [i=1:nf] csv \
       using (sel(word(fabrics,i)) ? beside(i) : NaN):(bw_change(column("gpus"), column("busbw_GBps"))) \
       with linespoints lc colour(i) dt dash(i) pt (6 + i) title word(fabrics,i), \
       0 with lines lc rgb "black" dt 3 notitle
  unset multiplot
  set output
}
