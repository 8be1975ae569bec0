! SPDX-License-Identifier: BSD-3-Clause
! Offloaded collectives from Fortran, mpif.h (STYLE_MPIF) or `use mpi`:
! MPI_IALLTOALL, MPI_IBCAST, MPI_IALLREDUCE (and in place), MPI_IGATHER,
! MPI_IALLTOALLV, MPI_IBARRIER, completed by MPI_WAIT, MPI_WAITALL,
! MPI_WAITANY, MPI_TESTALL; requests started in C and completed in
! Fortran and the other way round; a persistent alltoall (PCOLL: MPI-4's
! MPI_ALLTOALL_INIT, or Open MPI 4.1's MPIX_ALLTOALL_INIT) started with
! MPI_START and MPI_STARTALL. Every element is checked. Rank 0 prints the
! statistics lines the shim must print ("expect~:").
program f_colls
#ifdef STYLE_MPIF
    implicit none
    include 'mpif.h'
#else
    use mpi
    implicit none
#endif
    integer, parameter :: n = 1000, nb = 5000
    integer :: rank, size, ierr, i, p, k, idx, errs, total, it
    integer, allocatable :: sbuf(:), rbuf(:), cnt(:), dsp(:), red(:)
    integer, allocatable :: gat(:)
    double precision, allocatable :: bb(:)
    integer :: req(4), st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 4)
    integer :: calls(14), allc(14), preq, pr(1), r7(7), outc, nd, idxs(7)
    integer, allocatable :: ag(:), sc(:), rd(:), sn(:), ex(:), rsb(:)
    integer, allocatable :: wcnt(:), wdsp(:), wty(:)
    logical :: flag, mpich
    character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: lib
    integer :: liblen

    call MPI_INIT(ierr)
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, size, ierr)
    call MPI_GET_LIBRARY_VERSION(lib, liblen, ierr)
    mpich = index(lib, 'MPICH') > 0
    allocate(sbuf(n * size), rbuf(n * size), cnt(size), dsp(size))
    allocate(red(n), gat(n * size), bb(nb))
    allocate(ag(n * size), sc(n), rd(n), sn(n), ex(n), rsb(n))
    allocate(wcnt(size), wdsp(size), wty(size))
    errs = 0
    calls = 0

    do it = 1, 3
        ! MPI_IALLTOALL, waited with MPI_WAIT
        do p = 0, size - 1
            do i = 1, n
                sbuf(p * n + i) = it * 10000000 + rank * 100000 + p * 1000 + i
            end do
        end do
        rbuf = -1
        call MPI_IALLTOALL(sbuf, n, MPI_INTEGER, rbuf, n, MPI_INTEGER, &
                           MPI_COMM_WORLD, req(1), ierr)
        calls(1) = calls(1) + 1
        call MPI_WAIT(req(1), st, ierr)
        if (ierr /= MPI_SUCCESS .or. req(1) /= MPI_REQUEST_NULL) errs = errs + 1
        call check_a2a()

        ! MPI_IBCAST and MPI_IALLREDUCE together, MPI_WAITALL
        if (rank == mod(it, size)) then
            do i = 1, nb
                bb(i) = it * 0.5d0 + i
            end do
        else
            bb = -1d0
        end if
        do i = 1, n
            red(i) = rank + i * it
        end do
        call MPI_IBCAST(bb, nb, MPI_DOUBLE_PRECISION, mod(it, size), &
                        MPI_COMM_WORLD, req(1), ierr)
        call MPI_IALLREDUCE(MPI_IN_PLACE, red, n, MPI_INTEGER, MPI_SUM, &
                            MPI_COMM_WORLD, req(2), ierr)
        calls(2) = calls(2) + 1
        calls(3) = calls(3) + 1
        call MPI_WAITALL(2, req, sts, ierr)
        do i = 1, nb
            if (bb(i) /= it * 0.5d0 + i) errs = errs + 1
        end do
        do i = 1, n
            if (red(i) /= size * (size - 1) / 2 + size * i * it) errs = errs + 1
        end do

        ! MPI_IGATHER to the last rank and MPI_IALLTOALLV, MPI_WAITANY
        gat = -1
        call MPI_IGATHER(sbuf, n, MPI_INTEGER, gat, n, MPI_INTEGER, &
                         size - 1, MPI_COMM_WORLD, req(1), ierr)
        do p = 1, size
            cnt(p) = n
            dsp(p) = (size - p) * n   ! blocks in reverse order
        end do
        rbuf = -1
        call MPI_IALLTOALLV(sbuf, cnt, dsp, MPI_INTEGER, rbuf, cnt, dsp, &
                            MPI_INTEGER, MPI_COMM_WORLD, req(2), ierr)
        calls(4) = calls(4) + 1
        calls(5) = calls(5) + 1
        do k = 1, 2
            call MPI_WAITANY(2, req, idx, MPI_STATUS_IGNORE, ierr)
            if (idx < 1 .or. idx > 2) errs = errs + 1
        end do
        call MPI_WAITANY(2, req, idx, st, ierr)
        ! MPICH 4.0.2's mpif.h and `use mpi` bindings add 1 to it
        if (idx /= MPI_UNDEFINED .and. &
            .not. (mpich .and. idx == MPI_UNDEFINED + 1)) errs = errs + 1
        if (rank == size - 1) then
            do p = 0, size - 1
                do i = 1, n
                    if (gat(p * n + i) /= it * 10000000 + p * 100000 + i) &
                        errs = errs + 1
                end do
            end do
        end if
        ! rank q's block for me lies at its (size - 1 - me) * n and lands
        ! at (size - 1 - q) * n
        do p = 0, size - 1
            do i = 1, n
                if (rbuf((size - 1 - p) * n + i) /= it * 10000000 + &
                    p * 100000 + (size - 1 - rank) * 1000 + i) errs = errs + 1
            end do
        end do

        ! MPI_IBARRIER, polled with MPI_TESTALL
        call MPI_IBARRIER(MPI_COMM_WORLD, req(1), ierr)
        calls(6) = calls(6) + 1
        flag = .false.
        do while (.not. flag)
            call MPI_TESTALL(1, req, flag, MPI_STATUSES_IGNORE, ierr)
        end do


        ! MPI_IALLGATHER, MPI_ISCATTER, MPI_IREDUCE, MPI_ISCAN,
        ! MPI_IEXSCAN, MPI_IREDUCE_SCATTER_BLOCK and MPI_IALLTOALLW at once,
        ! completed by MPI_WAITSOME
        do i = 1, n
            red(i) = rank + i * it
        end do
        ag = -1
        sc = -1
        rd = -1
        sn = -1
        ex = -1
        rsb = -1
        rbuf = -1
        do p = 1, size
            wcnt(p) = n
            wdsp(p) = (p - 1) * n * 4
            wty(p) = MPI_INTEGER
        end do
        call MPI_IALLGATHER(sbuf, n, MPI_INTEGER, ag, n, MPI_INTEGER, &
                            MPI_COMM_WORLD, r7(1), ierr)
        call MPI_ISCATTER(sbuf, n, MPI_INTEGER, sc, n, MPI_INTEGER, 0, &
                          MPI_COMM_WORLD, r7(2), ierr)
        call MPI_IREDUCE(red, rd, n, MPI_INTEGER, MPI_SUM, size - 1, &
                         MPI_COMM_WORLD, r7(3), ierr)
        call MPI_ISCAN(red, sn, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
                       r7(4), ierr)
        call MPI_IEXSCAN(red, ex, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
                         r7(5), ierr)
        call MPI_IREDUCE_SCATTER_BLOCK(sbuf, rsb, n, MPI_INTEGER, MPI_SUM, &
                                       MPI_COMM_WORLD, r7(6), ierr)
        call MPI_IALLTOALLW(sbuf, wcnt, wdsp, wty, rbuf, wcnt, wdsp, wty, &
                            MPI_COMM_WORLD, r7(7), ierr)
        do k = 8, 14
            calls(k) = calls(k) + 1
        end do
        nd = 0
        do while (nd < 7)
            call MPI_WAITSOME(7, r7, outc, idxs, MPI_STATUSES_IGNORE, ierr)
            if (outc == MPI_UNDEFINED) exit
            nd = nd + outc
        end do
        if (nd /= 7) errs = errs + 1
        do i = 1, n
            do p = 0, size - 1
                if (ag(p * n + i) /= it * 10000000 + p * 100000 + i) &
                    errs = errs + 1
            end do
            if (sc(i) /= it * 10000000 + rank * 1000 + i) errs = errs + 1
            if (rank == size - 1 .and. rd(i) /= size * (size - 1) / 2 + &
                size * i * it) errs = errs + 1
            if (sn(i) /= rank * (rank + 1) / 2 + (rank + 1) * i * it) &
                errs = errs + 1
            if (rank > 0 .and. ex(i) /= rank * (rank - 1) / 2 + &
                rank * i * it) errs = errs + 1
            if (rsb(i) /= size * (it * 10000000 + rank * 1000 + i) + &
                100000 * (size * (size - 1) / 2)) errs = errs + 1
        end do
        call check_a2a()

        ! Started in C, completed here; started here, completed in C.
        rbuf = -1
        call fc_ialltoall(sbuf, rbuf, n, MPI_COMM_WORLD, req(1))
        calls(1) = calls(1) + 1
        call MPI_WAIT(req(1), MPI_STATUS_IGNORE, ierr)
        call check_a2a()
        rbuf = -1
        call MPI_IALLTOALL(sbuf, n, MPI_INTEGER, rbuf, n, MPI_INTEGER, &
                           MPI_COMM_WORLD, req(1), ierr)
        calls(1) = calls(1) + 1
        call fc_wait(req(1))
        call check_a2a()
    end do

    ! A persistent alltoall, restarted with new contents.
    call PCOLL(sbuf, n, MPI_INTEGER, rbuf, n, MPI_INTEGER, MPI_COMM_WORLD, &
               MPI_INFO_NULL, preq, ierr)
    do it = 4, 8
        do p = 0, size - 1
            do i = 1, n
                sbuf(p * n + i) = it * 10000000 + rank * 100000 + p * 1000 + i
            end do
        end do
        rbuf = -1
        if (mod(it, 2) == 0) then
            call MPI_START(preq, ierr)
        else
            pr(1) = preq
            call MPI_STARTALL(1, pr, ierr)
        end if
        calls(7) = calls(7) + 1
        call MPI_WAIT(preq, st, ierr)
        if (preq == MPI_REQUEST_NULL) errs = errs + 1   ! stays allocated
        call check_a2a()
    end do
    call MPI_REQUEST_FREE(preq, ierr)
    if (preq /= MPI_REQUEST_NULL) errs = errs + 1

    call MPI_REDUCE(calls, allc, 14, MPI_INTEGER, MPI_SUM, 0, &
                    MPI_COMM_WORLD, ierr)
    call MPI_ALLREDUCE(errs, total, 1, MPI_INTEGER, MPI_SUM, &
                       MPI_COMM_WORLD, ierr)
    if (rank == 0) then
        write (*, '(a,i0,a)') 'expect~: ialltoall offloaded=', allc(1), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: ibcast offloaded=', allc(2), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: iallreduce offloaded=', allc(3), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: igather offloaded=', allc(4), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: ialltoallv offloaded=', allc(5), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: ibarrier offloaded=', allc(6), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: alltoall_init offloaded=', allc(7), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: iallgather offloaded=', allc(8), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: iscatter offloaded=', allc(9), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: ireduce offloaded=', allc(10), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: iscan offloaded=', allc(11), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: iexscan offloaded=', allc(12), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: ireduce_scatter_block offloaded=', allc(13), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: ialltoallw offloaded=', allc(14), &
            ' fallback=0 bytes=[0-9]+'
        if (total == 0) then
            write (*, '(a)') 'result: ok'
        else
            write (*, '(a,i0,a)') 'result: FAILED (', total, ' errors)'
        end if
    end if
    call MPI_FINALIZE(ierr)

contains

    subroutine check_a2a()
        integer :: q, j

        do q = 0, size - 1
            do j = 1, n
                if (rbuf(q * n + j) /= it * 10000000 + q * 100000 + &
                    rank * 1000 + j) errs = errs + 1
            end do
        end do
    end subroutine check_a2a

end program f_colls
