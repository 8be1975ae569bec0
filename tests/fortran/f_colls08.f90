! SPDX-License-Identifier: BSD-3-Clause
! Offloaded collectives from Fortran with `use mpi_f08`: the calls of
! f_colls.F90 with the f08 types (MPI_Comm, MPI_Request, MPI_Status),
! ierror left out where f08 makes it optional, requests started in C and
! completed in Fortran and the other way round. Every element is checked;
! rank 0 prints the statistics lines the shim must print ("expect~:").
program f_colls08
    use mpi_f08
    implicit none
    interface
        subroutine fc_wait(req) bind(C, name="fc_wait_")
            use, intrinsic :: iso_c_binding, only: c_int
            integer(c_int) :: req
        end subroutine fc_wait
        subroutine fc_ialltoall(sbuf, rbuf, n, comm, req) &
                bind(C, name="fc_ialltoall_")
            use, intrinsic :: iso_c_binding, only: c_int
            integer(c_int) :: sbuf(*), rbuf(*), n, comm, req
        end subroutine fc_ialltoall
    end interface
    integer, parameter :: n = 1000, nb = 5000
    integer :: rank, size, i, p, k, idx, errs, total, it
    integer, allocatable :: sbuf(:), rbuf(:), cnt(:), dsp(:), red(:)
    integer, allocatable :: gat(:)
    double precision, allocatable :: bb(:)
    type(MPI_Request) :: req(4), r7(7)
    type(MPI_Datatype), allocatable :: wty(:)
    type(MPI_Status) :: st, sts(4)
    integer :: calls(13), allc(13), ierr, outc, nd, idxs(7)
    integer, allocatable :: ag(:), sc(:), rd(:), sn(:), ex(:), rsb(:)
    integer, allocatable :: wcnt(:), wdsp(:)
    logical :: flag, mpich
    character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: lib
    integer :: liblen

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, size)
    call MPI_Get_library_version(lib, liblen)
    mpich = index(lib, 'MPICH') > 0
    allocate(sbuf(n * size), rbuf(n * size), cnt(size), dsp(size))
    allocate(red(n), gat(n * size), bb(nb))
    allocate(ag(n * size), sc(n), rd(n), sn(n), ex(n), rsb(n))
    allocate(wcnt(size), wdsp(size), wty(size))
    errs = 0
    calls = 0

    do it = 1, 3
        do p = 0, size - 1
            do i = 1, n
                sbuf(p * n + i) = it * 10000000 + rank * 100000 + p * 1000 + i
            end do
        end do
        rbuf = -1
        call MPI_Ialltoall(sbuf, n, MPI_INTEGER, rbuf, n, MPI_INTEGER, &
                           MPI_COMM_WORLD, req(1), ierr)
        calls(1) = calls(1) + 1
        call MPI_Wait(req(1), st)
        if (ierr /= MPI_SUCCESS .or. req(1) /= MPI_REQUEST_NULL) errs = errs + 1
        call check_a2a()

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
        call MPI_Ibcast(bb, nb, MPI_DOUBLE_PRECISION, mod(it, size), &
                        MPI_COMM_WORLD, req(1))
        call MPI_Iallreduce(MPI_IN_PLACE, red, n, MPI_INTEGER, MPI_SUM, &
                            MPI_COMM_WORLD, req(2))
        calls(2) = calls(2) + 1
        calls(3) = calls(3) + 1
        call MPI_Waitall(2, req, sts)
        do i = 1, nb
            if (bb(i) /= it * 0.5d0 + i) errs = errs + 1
        end do
        do i = 1, n
            if (red(i) /= size * (size - 1) / 2 + size * i * it) errs = errs + 1
        end do

        gat = -1
        call MPI_Igather(sbuf, n, MPI_INTEGER, gat, n, MPI_INTEGER, &
                         size - 1, MPI_COMM_WORLD, req(1))
        do p = 1, size
            cnt(p) = n
            dsp(p) = (size - p) * n
        end do
        rbuf = -1
        call MPI_Ialltoallv(sbuf, cnt, dsp, MPI_INTEGER, rbuf, cnt, dsp, &
                            MPI_INTEGER, MPI_COMM_WORLD, req(2))
        calls(4) = calls(4) + 1
        calls(5) = calls(5) + 1
        do k = 1, 2
            call MPI_Waitany(2, req, idx, MPI_STATUS_IGNORE)
            ! MPICH 4.0.2's own mpi_f08 MPI_Waitany counts from 0
            if ((idx < 1 .or. idx > 2) .and. &
                .not. (mpich .and. (idx == 0 .or. idx == 1))) errs = errs + 1
        end do
        call MPI_Waitany(2, req, idx, st)
        if (idx /= MPI_UNDEFINED) errs = errs + 1
        if (rank == size - 1) then
            do p = 0, size - 1
                do i = 1, n
                    if (gat(p * n + i) /= it * 10000000 + p * 100000 + i) &
                        errs = errs + 1
                end do
            end do
        end if
        do p = 0, size - 1
            do i = 1, n
                if (rbuf((size - 1 - p) * n + i) /= it * 10000000 + &
                    p * 100000 + (size - 1 - rank) * 1000 + i) errs = errs + 1
            end do
        end do

        call MPI_Ibarrier(MPI_COMM_WORLD, req(1))
        calls(6) = calls(6) + 1
        flag = .false.
        do while (.not. flag)
            call MPI_Testall(1, req, flag, MPI_STATUSES_IGNORE)
        end do


        ! MPI_Iallgather, MPI_Iscatter, MPI_IREDUCE, MPI_Iscan,
        ! MPI_Iexscan, MPI_Ireduce_scatter_block and MPI_Ialltoallw at once,
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
        call MPI_Iallgather(sbuf, n, MPI_INTEGER, ag, n, MPI_INTEGER, &
                            MPI_COMM_WORLD, r7(1))
        call MPI_Iscatter(sbuf, n, MPI_INTEGER, sc, n, MPI_INTEGER, 0, &
                          MPI_COMM_WORLD, r7(2))
        call MPI_Ireduce(red, rd, n, MPI_INTEGER, MPI_SUM, size - 1, &
                         MPI_COMM_WORLD, r7(3))
        call MPI_Iscan(red, sn, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
                       r7(4))
        call MPI_Iexscan(red, ex, n, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, &
                         r7(5))
        call MPI_Ireduce_scatter_block(sbuf, rsb, n, MPI_INTEGER, MPI_SUM, &
                                       MPI_COMM_WORLD, r7(6))
        call MPI_Ialltoallw(sbuf, wcnt, wdsp, wty, rbuf, wcnt, wdsp, wty, &
                            MPI_COMM_WORLD, r7(7))
        do k = 7, 13
            calls(k) = calls(k) + 1
        end do
        nd = 0
        do while (nd < 7)
            call MPI_Waitsome(7, r7, outc, idxs, MPI_STATUSES_IGNORE)
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

        rbuf = -1
        call fc_ialltoall(sbuf, rbuf, n, MPI_COMM_WORLD%MPI_VAL, &
                          req(1)%MPI_VAL)
        calls(1) = calls(1) + 1
        call MPI_Wait(req(1), MPI_STATUS_IGNORE)
        call check_a2a()
        rbuf = -1
        call MPI_Ialltoall(sbuf, n, MPI_INTEGER, rbuf, n, MPI_INTEGER, &
                           MPI_COMM_WORLD, req(1))
        calls(1) = calls(1) + 1
        call fc_wait(req(1)%MPI_VAL)
        call check_a2a()
    end do

    call MPI_Reduce(calls, allc, 13, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD)
    call MPI_Allreduce(errs, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
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
        write (*, '(a,i0,a)') 'expect~: iallgather offloaded=', allc(7), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: iscatter offloaded=', allc(8), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: ireduce offloaded=', allc(9), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: iscan offloaded=', allc(10), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: iexscan offloaded=', allc(11), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: ireduce_scatter_block offloaded=', allc(12), &
            ' fallback=0 bytes=[0-9]+'
        write (*, '(a,i0,a)') 'expect~: ialltoallw offloaded=', allc(13), &
            ' fallback=0 bytes=[0-9]+'
        if (total == 0) then
            write (*, '(a)') 'result: ok'
        else
            write (*, '(a,i0,a)') 'result: FAILED (', total, ' errors)'
        end if
    end if
    call MPI_Finalize()

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

end program f_colls08
